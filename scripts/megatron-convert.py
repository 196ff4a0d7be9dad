#!/usr/bin/env python3
"""Converts GPT checkpoints between Megatron-LM's legacy layout and gpt-train's, both directions.

  import: DIR/iter_*/mp_rank_TT[_PPP]/model_optim_rng.pt at any tensor/pipeline size (legacy or
          --use-mcore-models names, virtual pipeline chunks) -> a gpt-train checkpoint (global
          tensors; AdamW moments start at zero, as --no-load-optim would)
  export: a gpt-train checkpoint -> Megatron's layout at a chosen tensor/pipeline size, to load
          in Megatron with --no-load-optim --no-load-rng (or --finetune)

Needs Python 3 and NumPy only; .pt files are read and written by scripts/megatron/torchfile.py.

Examples:
  scripts/megatron-convert.py import megatron-ckpt ours --vocab-size 50257
  gpt-train ... --load ours
  scripts/megatron-convert.py export ours megatron-out --tensor-model-parallel-size 2 \\
      --pipeline-model-parallel-size 2
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "megatron"))

import numpy as np  # noqa: E402

import gptckpt  # noqa: E402
import megatron_layout as ml  # noqa: E402
import torchfile  # noqa: E402

PROG = "megatron-convert"


class Fail(Exception):
    pass


def progress(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def read_latest(root):
    path = os.path.join(root, gptckpt.LATEST)
    try:
        text = open(path).read().strip()
    except OSError:
        raise Fail(f"{root}: not a Megatron checkpoint directory (no {gptckpt.LATEST})")
    if text == "release":
        return "release", 0
    if not re.fullmatch(r"\d+", text):
        raise Fail(f"{path}: does not hold an iteration number")
    return f"iter_{int(text):07d}", int(text)


def megatron_files(root):
    sub, it = read_latest(root)
    d = os.path.join(root, sub)
    ranks = {}
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.fullmatch(r"mp_rank_(\d\d)(?:_(\d\d\d))?", name)
        if m and os.path.exists(os.path.join(d, name, "model_optim_rng.pt")):
            ranks[(int(m.group(1)), int(m.group(2) or 0))] = os.path.join(d, name,
                                                                          "model_optim_rng.pt")
    if not ranks:
        raise Fail(f"{d}: no mp_rank_*/model_optim_rng.pt")
    T = 1 + max(t for t, _ in ranks)
    P = 1 + max(p for _, p in ranks)
    for t in range(T):
        for p in range(P):
            if (t, p) not in ranks:
                raise Fail(f"{d}: tensor rank {t} pipeline rank {p} is missing")
    return ranks, T, P, it


def arg(ns, name, default=None):
    return getattr(ns, name, default) if ns is not None else default


def do_import(a):
    ranks, T, P, it = megatron_files(a.megatron)
    states = {}
    for (t, p), path in sorted(ranks.items()):
        progress(f"reading {path}")
        try:
            states[(t, p)] = torchfile.load(path)
        except Exception as e:  # a damaged file: zip, pickle or storage errors alike
            raise Fail(f"{path}: cannot read the PyTorch file ({type(e).__name__}: {e})")
    first = states[(0, 0)]
    ns = first.get("args")
    version = float(first.get("checkpoint_version", 0))
    where = ranks[(0, 0)]
    if version < 2.0:
        raise Fail(f"{where}: checkpoint_version {version} (QKV ordered per head only from 2.0)")
    for name, bad, why in [("untie_embeddings_and_output_weights", True, "an untied output layer"),
                           ("swiglu", True, "SwiGLU"), ("add_bias_linear", False, "no biases"),
                           ("group_query_attention", True, "grouped-query attention")]:
        if arg(ns, name, not bad) == bad:
            raise Fail(f"{where}: {why} (--{name.replace('_', '-')}) is not a gpt-train model")
    pe = arg(ns, "position_embedding_type", "learned_absolute")
    norm = arg(ns, "normalization", "LayerNorm")
    if pe != "learned_absolute" or norm != "LayerNorm":
        raise Fail(f"{where}: {pe} positions / {norm} are not a gpt-train model")
    if arg(ns, "tensor_model_parallel_size", T) != T or arg(ns, "pipeline_model_parallel_size",
                                                              P) != P:
        raise Fail(f"{where}: args say tensor {arg(ns, 'tensor_model_parallel_size')} x pipeline "
                   f"{arg(ns, 'pipeline_model_parallel_size')}, the files {T} x {P}")
    heads = arg(ns, "num_attention_heads")
    C = arg(ns, "hidden_size")
    if not heads or not C or not arg(ns, "seq_length"):
        raise Fail(f"{where}: no args with num_attention_heads, hidden_size and seq_length")
    vocab = a.vocab_size or arg(ns, "vocab_size")
    if not vocab:
        raise Fail(f"{where}: args.vocab_size is not recorded (a tokenizer-sized vocabulary); "
                   "pass --vocab-size (GPT-2: 50257)")
    divisible = a.make_vocab_size_divisible_by or arg(ns, "make_vocab_size_divisible_by", 128)

    # Model parts in global layer order, each a list over tensor ranks.
    nparts = len(ml.model_parts(first))
    parts = []
    for p, c in ml.stage_chunks(P, nparts):
        parts.append([ml.Part(ml.model_parts(states[(t, p)])[c]) for t in range(T)])
    named = {}
    wte = [parts[0][t].get("embedding.word_embeddings.weight") for t in range(T)]
    wpe = parts[0][0].get("embedding.position_embeddings.weight")
    if any(w is None for w in wte) or wpe is None:
        raise Fail(f"{where}: the first stage holds no word/position embeddings")
    wte = np.concatenate(wte, axis=0)
    padded = gptckpt.pad_vocab(vocab, 1, divisible)
    if wte.shape[0] < vocab:
        raise Fail(f"{where}: word embeddings have {wte.shape[0]} rows, --vocab-size is {vocab}")
    rows = np.zeros((padded, wte.shape[1]), np.float32)
    keep = min(padded, wte.shape[0])
    rows[:keep] = wte[:keep]
    named["embedding.word_embeddings.weight"] = rows
    named["embedding.position_embeddings.weight"] = wpe
    L = 0
    for part in parts:
        for i in range(part[0].num_layers):
            for ours, _, _, cut in ml.LAYER:
                try:
                    x = ml.join([part[t].layer(i, ours) for t in range(T)], cut)
                except ValueError as e:
                    raise Fail(f"{where}: {e}")
                if "linear_qkv" in ours:
                    x = ml.qkv_to_ours(x, heads)
                named[f"decoder.layers.{L}.{ours}"] = x
            L += 1
    for ours, which in ml.FINAL:
        x = parts[-1][0].final(which)
        if x is None:
            raise Fail(f"{where}: the last stage holds no final layernorm")
        named[ours] = x
    if arg(ns, "num_layers", L) != L:
        raise Fail(f"{where}: args.num_layers is {arg(ns, 'num_layers')}, the files hold {L}")
    model = {"num-layers": L, "hidden-size": C, "num-attention-heads": heads,
             "ffn-hidden-size": arg(ns, "ffn_hidden_size") or 4 * C,
             "seq-length": arg(ns, "seq_length"),
             "max-position-embeddings": int(wpe.shape[0]),
             "vocab-size": vocab, "padded-vocab-size": padded}
    for name, shape in gptckpt.tensors(model):
        if tuple(named[name].shape) != tuple(shape):
            raise Fail(f"{where}: {name} has shape {tuple(named[name].shape)}, want {shape}")
    c = gptckpt.Checkpoint()
    c.model = model
    c.params = gptckpt.flatten(model, named)
    c.adam_m = np.zeros_like(c.params)
    c.adam_v = np.zeros_like(c.params)
    c.state = {"iteration": it, "consumed-train-samples": arg(ns, "consumed_train_samples", 0) or 0,
               "consumed-valid-samples": arg(ns, "consumed_valid_samples", 0) or 0,
               "skipped-iterations": 0, "nan-iterations": 0, "adam-step": 0,
               "seed": arg(ns, "seed", 1234)}
    c.init_method_std = float(arg(ns, "init_method_std", 0.02))
    c.arguments = f"imported from Megatron checkpoint {a.megatron} (tensor {T}, pipeline {P})"
    gptckpt.save(a.out, c)
    progress(f"wrote {a.out} at iteration {it}: {L} layers, tensor {T} x pipeline {P} x "
             f"{nparts} chunk(s) gathered; AdamW moments start at zero")


def partition(a, L):
    P = a.pipeline_model_parallel_size
    if a.pipeline_partition:
        try:
            counts = [int(x) for x in a.pipeline_partition.split("-")]
        except ValueError:
            raise Fail(f"--pipeline-partition {a.pipeline_partition}: not numbers joined by -")
        if len(counts) != P or sum(counts) != L or min(counts) < 0:
            raise Fail(f"--pipeline-partition {a.pipeline_partition}: want {P} counts summing "
                       f"to {L} layers")
        return counts
    if L % P:
        raise Fail(f"--pipeline-model-parallel-size {P} does not divide the {L} layers "
                   "(pass --pipeline-partition)")
    return [L // P] * P


def do_export(a):
    try:
        c = gptckpt.load(a.ckpt)
    except (ValueError, KeyError, OSError) as e:
        raise Fail(str(e))
    m = c.model
    T, P = a.tensor_model_parallel_size, a.pipeline_model_parallel_size
    L, C, H, F = m["num-layers"], m["hidden-size"], m["num-attention-heads"], m["ffn-hidden-size"]
    for what, n in [("--num-attention-heads", H), ("--ffn-hidden-size", F)]:
        if n % T:
            raise Fail(f"--tensor-model-parallel-size {T} does not divide {what} {n}")
    counts = partition(a, L)
    named = gptckpt.unflatten(m, c.params)
    divisible = a.make_vocab_size_divisible_by
    padded = gptckpt.pad_vocab(m["vocab-size"], T, divisible)
    wte = np.zeros((padded, C), np.float32)
    keep = min(padded, m["padded-vocab-size"])
    wte[:keep] = named["embedding.word_embeddings.weight"][:keep]
    wte_shards = np.split(wte, T, axis=0)
    it = c.state["iteration"]
    ns = argparse.Namespace(
        num_layers=L, hidden_size=C, ffn_hidden_size=F, num_attention_heads=H, kv_channels=C // H,
        seq_length=m["seq-length"], max_position_embeddings=m["max-position-embeddings"],
        vocab_size=m["vocab-size"], padded_vocab_size=padded,
        make_vocab_size_divisible_by=divisible, tensor_model_parallel_size=T,
        pipeline_model_parallel_size=P, iteration=it,
        consumed_train_samples=c.state["consumed-train-samples"],
        consumed_valid_samples=c.state["consumed-valid-samples"], seed=c.state["seed"],
        init_method_std=c.init_method_std, untie_embeddings_and_output_weights=False,
        position_embedding_type="learned_absolute", add_position_embedding=True,
        normalization="LayerNorm", add_bias_linear=True, swiglu=False,
        group_query_attention=False, num_query_groups=None, use_mcore_models=a.mcore,
        transformer_impl="local", fp16=False, bf16=False,
        pipeline_model_parallel_split_rank=None)
    sub = f"iter_{it:07d}"
    first = 0
    for p in range(P):
        for t in range(T):
            flat = {}
            if p == 0:
                flat["embedding.word_embeddings.weight"] = wte_shards[t]
                flat["embedding.position_embeddings.weight"] = \
                    named["embedding.position_embeddings.weight"]
            for i in range(counts[p]):
                for ours, legacy, mcore, cut in ml.LAYER:
                    x = named[f"decoder.layers.{first + i}.{ours}"]
                    if "linear_qkv" in ours:
                        x = ml.qkv_to_megatron(x, H)
                    shard = np.ascontiguousarray(ml.split(x, cut, T)[t])
                    flat[f"layers.{i}.{mcore[0] if a.mcore else legacy}"] = shard
            if p == P - 1:
                for ours, which in ml.FINAL:
                    flat["final_layernorm." + which] = named[ours]
            model = build_model(flat, a.mcore, p, P, wte_shards[t])
            state = {"args": ns, "checkpoint_version": 3.0, "iteration": it, "model": model}
            name = f"mp_rank_{t:02d}" + (f"_{p:03d}" if P > 1 else "")
            d = os.path.join(a.out, sub, name)
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, "model_optim_rng.pt")
            torchfile.save(state, path + ".tmp")
            os.replace(path + ".tmp", path)
            progress(f"wrote {path}")
        first += counts[p]
    tmp = os.path.join(a.out, gptckpt.LATEST + ".tmp")
    with open(tmp, "w") as f:
        f.write(f"{it}")
    os.replace(tmp, os.path.join(a.out, gptckpt.LATEST))
    progress(f"wrote {a.out}: iteration {it}, tensor {T} x pipeline {P} (layers per stage "
             f"{'-'.join(map(str, counts))}); load in Megatron with --no-load-optim --no-load-rng")


def build_model(flat, mcore, p, P, wte_shard):
    """Megatron's state dict of one stage from {embedding.*, layers.N.*, final_layernorm.*}."""
    from collections import OrderedDict
    if mcore:
        out = OrderedDict()
        for k, v in flat.items():
            out[k if k.startswith("embedding.") else "decoder." + k] = v
        if p == P - 1 and P > 1:
            out["output_layer.weight"] = wte_shard
        return out
    lm = OrderedDict()
    if p == 0:
        lm["embedding"] = OrderedDict(
            word_embeddings=OrderedDict(weight=flat["embedding.word_embeddings.weight"]),
            position_embeddings=OrderedDict(weight=flat["embedding.position_embeddings.weight"]))
    lm["encoder"] = OrderedDict((k, v) for k, v in flat.items() if not k.startswith("embedding."))
    model = OrderedDict(language_model=lm)
    if p == P - 1 and P > 1:
        model["word_embeddings_for_head"] = OrderedDict(weight=wte_shard)
    return model


def version():
    try:
        return open(os.path.join(HERE, "..", "VERSION")).read().strip()
    except OSError:
        return "unknown"


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"{PROG} {version()}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    im = sub.add_parser("import", help="Megatron checkpoint -> gpt-train checkpoint")
    im.add_argument("megatron", help="Megatron --save directory")
    im.add_argument("out", help="gpt-train checkpoint directory to write")
    im.add_argument("--vocab-size", type=int, default=0,
                    help="real vocabulary size (default: args.vocab_size of the checkpoint)")
    im.add_argument("--make-vocab-size-divisible-by", type=int, default=0,
                    help="gpt-train's vocabulary padding (default: the checkpoint's, else 128)")
    ex = sub.add_parser("export", help="gpt-train checkpoint -> Megatron checkpoint")
    ex.add_argument("ckpt", help="gpt-train checkpoint directory (--save)")
    ex.add_argument("out", help="Megatron checkpoint directory to write")
    ex.add_argument("--tensor-model-parallel-size", type=int, default=1)
    ex.add_argument("--pipeline-model-parallel-size", type=int, default=1)
    ex.add_argument("--pipeline-partition", default="",
                    help="layers per pipeline stage, e.g. 3-5 (default: even)")
    ex.add_argument("--make-vocab-size-divisible-by", type=int, default=128)
    ex.add_argument("--mcore", action="store_true",
                    help="megatron-core names (--use-mcore-models), else the legacy model's")
    a = ap.parse_args()
    if a.cmd == "export":
        for flag in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                     "make_vocab_size_divisible_by"):
            if getattr(a, flag) < 1:
                ap.error(f"--{flag.replace('_', '-')} must be at least 1")
    elif a.vocab_size < 0 or a.make_vocab_size_divisible_by < 0:
        ap.error("--vocab-size and --make-vocab-size-divisible-by must be positive")
    try:
        do_import(a) if a.cmd == "import" else do_export(a)
    except Fail as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        sys.exit(1)
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # an unexpected file layout
        print(f"{PROG}: {a.megatron if a.cmd == 'import' else a.ckpt}: unexpected checkpoint "
              f"content ({type(e).__name__}: {e})", file=sys.stderr)
        sys.exit(1)
    except OSError as e:
        print(f"{PROG}: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
