"""Megatron-LM GPT checkpoints (legacy `torch` format) <-> the global tensors of gpt-train.

Megatron's files: DIR/iter_%07d/mp_rank_TT[_PPP]/model_optim_rng.pt, one per tensor rank TT and
pipeline rank PPP (no _PPP when the pipeline size is 1). Each holds `args` (argparse.Namespace),
`checkpoint_version` 3.0, `iteration` and `model`: the legacy module tree
  language_model.embedding.{word_embeddings,position_embeddings}.weight     (first stage)
  language_model.encoder.layers.N.{input_layernorm, self_attention.query_key_value,
      self_attention.dense, post_attention_layernorm, mlp.dense_h_to_4h, mlp.dense_4h_to_h}.*
  language_model.encoder.final_layernorm.*                                   (last stage)
  word_embeddings_for_head.weight                                  (last stage when P > 1)
or, under --use-mcore-models, flat megatron-core names (embedding.*, decoder.layers.N.*
self_attention.linear_qkv / linear_proj, mlp.linear_fc1 / linear_fc2, decoder.final_layernorm,
output_layer.weight). N counts from 0 on every stage; the virtual pipeline keeps chunk c of
stage p under `model{c}`, holding global chunk c·P + p. Tensor parallelism cuts QKV and fc1 by
rows (column-parallel), proj and fc2 weights by columns (row-parallel) and the word embedding by
vocabulary rows padded to a multiple of make_vocab_size_divisible_by·T. Megatron orders QKV rows
per head ([H, 3, head_dim], checkpoint_version >= 2); gpt-train's are [q | k | v].
"""
import re

import numpy as np

# ours (after decoder.layers.N.) -> (legacy name, megatron-core names), column/row/replicated
LAYER = [
    ("input_layernorm.weight", "input_layernorm.weight",
     ("input_layernorm.weight", "self_attention.linear_qkv.layer_norm_weight"), "rep"),
    ("input_layernorm.bias", "input_layernorm.bias",
     ("input_layernorm.bias", "self_attention.linear_qkv.layer_norm_bias"), "rep"),
    ("self_attention.linear_qkv.weight", "self_attention.query_key_value.weight",
     ("self_attention.linear_qkv.weight",), "col"),
    ("self_attention.linear_qkv.bias", "self_attention.query_key_value.bias",
     ("self_attention.linear_qkv.bias",), "col"),
    ("self_attention.linear_proj.weight", "self_attention.dense.weight",
     ("self_attention.linear_proj.weight",), "row"),
    ("self_attention.linear_proj.bias", "self_attention.dense.bias",
     ("self_attention.linear_proj.bias",), "rep"),
    ("pre_mlp_layernorm.weight", "post_attention_layernorm.weight",
     ("pre_mlp_layernorm.weight", "mlp.linear_fc1.layer_norm_weight"), "rep"),
    ("pre_mlp_layernorm.bias", "post_attention_layernorm.bias",
     ("pre_mlp_layernorm.bias", "mlp.linear_fc1.layer_norm_bias"), "rep"),
    ("mlp.linear_fc1.weight", "mlp.dense_h_to_4h.weight", ("mlp.linear_fc1.weight",), "col"),
    ("mlp.linear_fc1.bias", "mlp.dense_h_to_4h.bias", ("mlp.linear_fc1.bias",), "col"),
    ("mlp.linear_fc2.weight", "mlp.dense_4h_to_h.weight", ("mlp.linear_fc2.weight",), "row"),
    ("mlp.linear_fc2.bias", "mlp.dense_4h_to_h.bias", ("mlp.linear_fc2.bias",), "rep"),
]
FINAL = [("decoder.final_layernorm.weight", "weight"), ("decoder.final_layernorm.bias", "bias")]


def qkv_to_ours(a, heads):
    """Megatron's per-head [H, 3, d] rows -> [3, H, d] ([q | k | v])."""
    rest = a.shape[1:]
    return a.reshape((heads, 3, -1) + rest).swapaxes(0, 1).reshape(a.shape)


def qkv_to_megatron(a, heads):
    rest = a.shape[1:]
    return a.reshape((3, heads, -1) + rest).swapaxes(0, 1).reshape(a.shape)


def stage_chunks(files_pp, virtual):
    """Global order of (pp, chunk) model parts: chunk c of stage p is global c·P + p."""
    return [(p, c) for c in range(virtual) for p in range(files_pp)]


def model_parts(state):
    """The model dicts of one file: [model] or [model0, model1, ...] (virtual pipeline)."""
    if "model" in state:
        return [state["model"]]
    parts = []
    while f"model{len(parts)}" in state:
        parts.append(state[f"model{len(parts)}"])
    if not parts:
        raise ValueError("no `model` in the checkpoint file")
    return parts


class Part:
    """One model part (one stage or virtual chunk) of one tensor rank, in either naming."""

    def __init__(self, model):
        self.mcore = "language_model" not in model
        if self.mcore:
            self.flat = model
        else:
            lm = model["language_model"]
            self.flat = {}
            emb = lm.get("embedding", {})
            for k in ("word_embeddings", "position_embeddings"):
                if k in emb:
                    self.flat[f"embedding.{k}.weight"] = emb[k]["weight"]
            enc = lm.get("encoder", lm.get("transformer", {}))
            for k, v in enc.items():
                self.flat["encoder." + k] = v
            if "output_layer" in lm:
                self.flat["output_layer.weight"] = lm["output_layer"]["weight"]
        prefix = "decoder.layers." if self.mcore else "encoder.layers."
        idx = {int(m.group(1)) for k in self.flat
               for m in [re.match(re.escape(prefix) + r"(\d+)\.", k)] if m}
        self.num_layers = max(idx) + 1 if idx else 0
        self.prefix = prefix

    def layer(self, i, ours):
        for o, legacy, mcore, _ in LAYER:
            if o == ours:
                # Older legacy files (the `transformer` key) say attention for self_attention.
                names = mcore if self.mcore else (legacy, legacy.replace("self_attention.",
                                                                         "attention."))
                for n in names:
                    key = f"{self.prefix}{i}.{n}"
                    if key in self.flat:
                        return self.flat[key]
                raise ValueError(f"layer {i}: none of {', '.join(names)} in the checkpoint")
        raise KeyError(ours)

    def get(self, key):
        return self.flat.get(key)

    def final(self, which):
        return self.flat.get(("decoder.final_layernorm." if self.mcore else
                              "encoder.final_layernorm.") + which)


def join(shards, cut):
    if cut == "col":
        return np.concatenate(shards, axis=0)
    if cut == "row":
        return np.concatenate(shards, axis=1)
    return shards[0]


def split(a, cut, T):
    if cut == "col":
        return np.split(a, T, axis=0)
    if cut == "row":
        return np.split(a, T, axis=1)
    return [a] * T
