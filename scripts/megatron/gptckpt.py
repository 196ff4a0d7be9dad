"""gpt-train checkpoints (train/model/checkpoint.h) from Python: read either format, write one shard.

A checkpoint holds the global tensors (tensor/pipeline shards gathered) in the flat order of
train/model/layout.h, so its tensors are named and sized by `tensors(model)` below.
"""
import os

import numpy as np

from xxh64 import Hasher

LATEST = "latest_checkpointed_iteration.txt"
MODEL_KEYS = ["num-layers", "hidden-size", "num-attention-heads", "ffn-hidden-size", "seq-length",
              "max-position-embeddings", "vocab-size", "padded-vocab-size"]
STATE_KEYS = ["iteration", "consumed-train-samples", "consumed-valid-samples",
              "skipped-iterations", "nan-iterations", "adam-step", "seed"]


def pad_vocab(vocab, tp=1, divisible_by=128):
    m = divisible_by * tp
    return (vocab + m - 1) // m * m


def tensors(model):
    """[(name, shape)] of the flat buffer, in order (train/model/layout.cpp)."""
    C, F = model["hidden-size"], model["ffn-hidden-size"]
    out = [("embedding.word_embeddings.weight", (model["padded-vocab-size"], C)),
           ("embedding.position_embeddings.weight", (model["max-position-embeddings"], C))]
    for i in range(model["num-layers"]):
        p = f"decoder.layers.{i}."
        out += [(p + "input_layernorm.weight", (C,)), (p + "input_layernorm.bias", (C,)),
                (p + "self_attention.linear_qkv.weight", (3 * C, C)),
                (p + "self_attention.linear_qkv.bias", (3 * C,)),
                (p + "self_attention.linear_proj.weight", (C, C)),
                (p + "self_attention.linear_proj.bias", (C,)),
                (p + "pre_mlp_layernorm.weight", (C,)), (p + "pre_mlp_layernorm.bias", (C,)),
                (p + "mlp.linear_fc1.weight", (F, C)), (p + "mlp.linear_fc1.bias", (F,)),
                (p + "mlp.linear_fc2.weight", (C, F)), (p + "mlp.linear_fc2.bias", (C,))]
    out += [("decoder.final_layernorm.weight", (C,)), ("decoder.final_layernorm.bias", (C,))]
    return out


def unflatten(model, flat):
    """{name: array view} of a flat fp32 buffer."""
    out, off = {}, 0
    for name, shape in tensors(model):
        n = int(np.prod(shape))
        out[name] = flat[off:off + n].reshape(shape)
        off += n
    if off != flat.size:
        raise ValueError(f"{flat.size} parameters, the model shape needs {off}")
    return out


def flatten(model, named):
    return np.concatenate([np.asarray(named[n], np.float32).reshape(-1)
                           for n, _ in tensors(model)])


class Checkpoint:
    """model: {MODEL_KEYS: int}, state: {STATE_KEYS: int, ...}, init_method_std, arguments,
    params/adam_m/adam_v: flat fp32 arrays."""

    def __init__(self):
        self.model, self.state = {}, {}
        self.init_method_std, self.arguments = 0.02, ""
        self.loss_scale = None  # (scale, growth tracker, hysteresis tracker)
        self.params = self.adam_m = self.adam_v = None


def _read_file(path, magics):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24 or data[:8] not in magics:
        raise ValueError(f"{path}: not a gpt-train checkpoint (bad magic)")
    h = Hasher()
    h.update(memoryview(data)[:-8])
    if h.digest() != int.from_bytes(data[-8:], "little"):
        raise ValueError(f"{path}: checkpoint is corrupt (checksum mismatch)")
    hlen = int.from_bytes(data[8:16], "little")
    kv = {}
    for line in data[16:16 + hlen].decode().split("\n"):
        if "=" in line:
            k, v = line.split("=", 1)
            kv[k] = v
    return data, kv, 16 + hlen


def _state_from(kv, c):
    c.model = {k: int(kv["model." + k]) for k in MODEL_KEYS}
    c.state = {k: int(kv[k]) for k in STATE_KEYS}
    c.init_method_std = float(kv.get("init-method-std", "0.02"))
    c.arguments = kv.get("arguments", "")
    if "loss-scale" in kv:
        c.loss_scale = (float(kv["loss-scale"]), int(kv["loss-scale-growth-tracker"]),
                        int(kv["loss-scale-hysteresis-tracker"]))


def load(root):
    """The latest checkpoint in `root` (raises ValueError when missing or corrupt)."""
    try:
        it = int(open(os.path.join(root, LATEST)).read().split()[0])
    except (OSError, ValueError, IndexError):
        raise ValueError(f"{root}: not a gpt-train checkpoint directory (no readable {LATEST})")
    d = os.path.join(root, f"iter_{it:07d}")
    c = Checkpoint()
    single = os.path.join(d, "model_optim_rng.bin")
    if os.path.exists(single):
        data, kv, off = _read_file(single, {b"GPTCKPT1"})
        _state_from(kv, c)
        n = int(kv["num-params"])
        if off + 12 * n + 8 != len(data):
            raise ValueError(f"{single}: checkpoint size does not match its header")
        arr = np.frombuffer(data, "<f4", 3 * n, off)
        c.params, c.adam_m, c.adam_v = (arr[i * n:(i + 1) * n].copy() for i in range(3))
        return c
    index = os.path.join(d, "index.txt")
    if not os.path.exists(index):
        raise ValueError(f"{index}: checkpoint index is missing (an incomplete checkpoint?)")
    files = [l[5:] for l in open(index).read().split("\n") if l.startswith("file=")]
    covered = None
    for r, name in enumerate(files):
        path = os.path.join(d, name)
        data, kv, off = _read_file(path, {b"GPTSHRD1"})
        if r == 0:
            _state_from(kv, c)
            n = int(kv["num-params"])
            c.params, c.adam_m, c.adam_v = (np.zeros(n, np.float32) for _ in range(3))
            covered = np.zeros(n, np.int32)
        ranges = [tuple(map(int, x.split("-"))) for x in kv.get("ranges", "").split(",") if x]
        count = sum(hi - lo for lo, hi in ranges)
        if off + 12 * count + 8 != len(data):
            raise ValueError(f"{path}: shard size does not match its header")
        p = off
        for buf in (c.params, c.adam_m, c.adam_v):
            for lo, hi in ranges:
                buf[lo:hi] = np.frombuffer(data, "<f4", hi - lo, p)
                p += 4 * (hi - lo)
        for lo, hi in ranges:
            covered[lo:hi] += 1
    if covered is None or (covered != 1).any():
        raise ValueError(f"{d}: the shards do not cover every parameter exactly once")
    return c


def _atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save(root, c):
    """Writes `c` as a one-shard checkpoint of iteration c.state['iteration'] and marks it latest."""
    n = c.params.size
    it = c.state["iteration"]
    d = os.path.join(root, f"iter_{it:07d}")
    os.makedirs(d, exist_ok=True)
    h = [f"model.{k}={c.model[k]}" for k in sorted(MODEL_KEYS)]
    h.append(f"init-method-std={c.init_method_std!r}")
    h += [f"{k}={c.state[k]}" for k in STATE_KEYS]
    scale = c.loss_scale or (0, 0, 0)
    h += [f"loss-scale={scale[0]!r}", f"loss-scale-growth-tracker={scale[1]}",
          f"loss-scale-hysteresis-tracker={scale[2]}", f"num-params={n}",
          "arguments=" + c.arguments.replace("\n", " "), "shard=0", "shards=1", f"ranges=0-{n}"]
    header = ("\n".join(h) + "\n").encode()
    body = bytearray(b"GPTSHRD1" + len(header).to_bytes(8, "little") + header)
    for buf in (c.params, c.adam_m, c.adam_v):
        body += np.ascontiguousarray(buf, "<f4").tobytes()
    hs = Hasher()
    hs.update(body)
    body += hs.digest().to_bytes(8, "little")
    _atomic(os.path.join(d, "shard_0_of_1.bin"), bytes(body))
    idx = ["format=GPTSHRD1", "shards=1", f"num-params={n}", "file=shard_0_of_1.bin"]
    off = 0
    for name, shape in tensors(c.model):
        idx.append(f"tensor={name} {'x'.join(map(str, shape))} {off}")
        off += int(np.prod(shape))
    _atomic(os.path.join(d, "index.txt"), ("\n".join(idx) + "\n").encode())
    _atomic(os.path.join(root, LATEST), f"{it}\n".encode())
