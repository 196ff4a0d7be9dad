"""Test helper: Megatron legacy checkpoints written from a gpt-train checkpoint's full tensors,
independently of scripts/megatron-convert.py's layout code (only the .pt writer is shared).

  megatron_synth.py write GPT_CKPT OUT T P [--mcore] [--torch]   Megatron's files, per rank
  megatron_synth.py same A B                                      two Megatron dirs hold equal tensors
  megatron_synth.py params A B                                    two gpt-train ckpts: same params, bit for bit
"""
import argparse
import collections
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "megatron"))
import numpy as np  # noqa: E402

import gptckpt  # noqa: E402
import torchfile  # noqa: E402


def shards_of(model, named, T, P, mcore):
    """{(t, p): model state dict}: the rules of Megatron's ColumnParallelLinear (rows),
    RowParallelLinear (columns), VocabParallelEmbedding (rows of the vocab padded to 128·T),
    per-head QKV ([H, 3, d] rows), local layer numbers on each stage."""
    C, H, L = model["hidden-size"], model["num-attention-heads"], model["num-layers"]
    d = C // H
    Vp = gptckpt.pad_vocab(model["vocab-size"], T)
    wte = np.zeros((Vp, C), np.float32)
    n = min(Vp, model["padded-vocab-size"])
    wte[:n] = named["embedding.word_embeddings.weight"][:n]
    per = L // P
    out = {}
    for p in range(P):
        for t in range(T):
            enc = collections.OrderedDict()
            mc = collections.OrderedDict()
            rows = slice(t * Vp // T, (t + 1) * Vp // T)
            if p == 0:
                mc["embedding.word_embeddings.weight"] = wte[rows]
                mc["embedding.position_embeddings.weight"] = \
                    named["embedding.position_embeddings.weight"]
            for i in range(per):
                g = f"decoder.layers.{p * per + i}."
                qkv_w = named[g + "self_attention.linear_qkv.weight"]
                qkv_b = named[g + "self_attention.linear_qkv.bias"]
                heads = range(t * H // T, (t + 1) * H // T)
                w = np.concatenate([qkv_w[j * C + h * d: j * C + (h + 1) * d]
                                    for h in heads for j in range(3)])
                b = np.concatenate([qkv_b[j * C + h * d: j * C + (h + 1) * d]
                                    for h in heads for j in range(3)])
                F = model["ffn-hidden-size"]
                fr = slice(t * F // T, (t + 1) * F // T)
                cr = slice(t * C // T, (t + 1) * C // T)
                legacy = [
                    ("input_layernorm.weight", named[g + "input_layernorm.weight"]),
                    ("input_layernorm.bias", named[g + "input_layernorm.bias"]),
                    ("self_attention.query_key_value.weight", w),
                    ("self_attention.query_key_value.bias", b),
                    ("self_attention.dense.weight",
                     named[g + "self_attention.linear_proj.weight"][:, cr]),
                    ("self_attention.dense.bias", named[g + "self_attention.linear_proj.bias"]),
                    ("post_attention_layernorm.weight", named[g + "pre_mlp_layernorm.weight"]),
                    ("post_attention_layernorm.bias", named[g + "pre_mlp_layernorm.bias"]),
                    ("mlp.dense_h_to_4h.weight", named[g + "mlp.linear_fc1.weight"][fr]),
                    ("mlp.dense_h_to_4h.bias", named[g + "mlp.linear_fc1.bias"][fr]),
                    ("mlp.dense_4h_to_h.weight", named[g + "mlp.linear_fc2.weight"][:, fr]),
                    ("mlp.dense_4h_to_h.bias", named[g + "mlp.linear_fc2.bias"]),
                ]
                mnames = ["input_layernorm.weight", "input_layernorm.bias",
                          "self_attention.linear_qkv.weight", "self_attention.linear_qkv.bias",
                          "self_attention.linear_proj.weight", "self_attention.linear_proj.bias",
                          "pre_mlp_layernorm.weight", "pre_mlp_layernorm.bias",
                          "mlp.linear_fc1.weight", "mlp.linear_fc1.bias",
                          "mlp.linear_fc2.weight", "mlp.linear_fc2.bias"]
                for (k, v), mk in zip(legacy, mnames):
                    enc[f"layers.{i}.{k}"] = np.ascontiguousarray(v)
                    mc[f"decoder.layers.{i}.{mk}"] = np.ascontiguousarray(v)
            if p == P - 1:
                for k in ("weight", "bias"):
                    enc["final_layernorm." + k] = named["decoder.final_layernorm." + k]
                    mc["decoder.final_layernorm." + k] = named["decoder.final_layernorm." + k]
                if P > 1:
                    mc["output_layer.weight"] = wte[rows]
            if mcore:
                out[(t, p)] = mc
                continue
            lm = {"encoder": enc}
            if p == 0:
                lm["embedding"] = {"word_embeddings": {"weight": mc["embedding.word_embeddings.weight"]},
                                   "position_embeddings": {
                                       "weight": mc["embedding.position_embeddings.weight"]}}
            m = {"language_model": lm}
            if p == P - 1 and P > 1:
                m["word_embeddings_for_head"] = {"weight": wte[rows]}
            out[(t, p)] = m
    return out, Vp


def write(a):
    c = gptckpt.load(a.ckpt)
    named = gptckpt.unflatten(c.model, c.params)
    shards, Vp = shards_of(c.model, named, a.T, a.P, a.mcore)
    it = c.state["iteration"]
    m = c.model
    ns = argparse.Namespace(num_layers=m["num-layers"], hidden_size=m["hidden-size"],
                            num_attention_heads=m["num-attention-heads"],
                            ffn_hidden_size=m["ffn-hidden-size"], seq_length=m["seq-length"],
                            max_position_embeddings=m["max-position-embeddings"],
                            padded_vocab_size=Vp, vocab_size=None,
                            tensor_model_parallel_size=a.T, pipeline_model_parallel_size=a.P,
                            consumed_train_samples=c.state["consumed-train-samples"],
                            consumed_valid_samples=c.state["consumed-valid-samples"],
                            seed=c.state["seed"], use_mcore_models=a.mcore)
    if a.torch:
        import torch
    for (t, p), model in shards.items():
        d = os.path.join(a.out, f"iter_{it:07d}", f"mp_rank_{t:02d}_{p:03d}" if a.P > 1 else
                         f"mp_rank_{t:02d}")
        os.makedirs(d, exist_ok=True)
        state = {"args": ns, "checkpoint_version": 3.0, "iteration": it, "model": model,
                 "optimizer": {"state": {}}, "rng_state": [{"random_rng_state": (3, (1, 2), None)}]}
        path = os.path.join(d, "model_optim_rng.pt")
        if a.torch:  # real torch: bf16 weights, as Megatron --bf16 saves them; (a torch RNG state)
            def conv(x):
                if isinstance(x, np.ndarray):
                    return torch.from_numpy(x.copy()).to(torch.bfloat16)
                if isinstance(x, dict):
                    return collections.OrderedDict((k, conv(v)) for k, v in x.items())
                return x
            state["model"] = conv(model)
            state["rng_state"] = [{"torch_rng_state": torch.get_rng_state()}]
            torch.save(state, path)
        else:
            torchfile.save(state, path)
    with open(os.path.join(a.out, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write(str(it))


def flat_tensors(obj, prefix=""):
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(flat_tensors(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: obj} if isinstance(obj, np.ndarray) else {}


def same(a):
    for root, _, files in os.walk(a.A):
        for f in files:
            if not f.endswith(".pt"):
                continue
            rel = os.path.relpath(os.path.join(root, f), a.A)
            x = flat_tensors(torchfile.load(os.path.join(a.A, rel))["model"])
            y = flat_tensors(torchfile.load(os.path.join(a.B, rel))["model"])
            assert x.keys() == y.keys(), (rel, sorted(set(x) ^ set(y)))
            for k in x:
                assert x[k].shape == y[k].shape and np.array_equal(x[k], y[k]), (rel, k)
    print("same")


def params(a):
    x, y = gptckpt.load(a.A), gptckpt.load(a.B)
    assert x.model == y.model, (x.model, y.model)
    assert np.array_equal(x.params, y.params), np.abs(x.params - y.params).max()
    print("params equal")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("ckpt")
    w.add_argument("out")
    w.add_argument("T", type=int)
    w.add_argument("P", type=int)
    w.add_argument("--mcore", action="store_true")
    w.add_argument("--torch", action="store_true")
    for n in ("same", "params"):
        s = sub.add_parser(n)
        s.add_argument("A")
        s.add_argument("B")
    a = ap.parse_args()
    {"write": write, "same": same, "params": params}[a.cmd](a)


if __name__ == "__main__":
    main()
