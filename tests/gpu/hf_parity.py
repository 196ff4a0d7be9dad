#!/usr/bin/env python3
"""gpt-train's exported model in Hugging Face transformers gives gpt-train's validation loss.

  hf_parity.py HF_DIR DATA_PREFIX CACHE_DIR SEQ_LEN NUM_SAMPLES EXPECTED_LOSS [REL_TOL]

Rebuilds the first NUM_SAMPLES samples of the validation split exactly as Megatron's GPTDataset
does (shuffle_idx -> sample_idx -> doc_idx over the .bin/.idx documents, read from the index maps
gpt-train wrote in CACHE_DIR), runs them through transformers' GPT2LMHeadModel in fp32 (no TF32)
and compares the mean next-token cross-entropy with EXPECTED_LOSS (what gpt-train printed for
'validation loss at the end of training'). Exits 1 when they differ by more than REL_TOL.
"""
import glob
import struct
import sys

import numpy as np
import torch
from transformers import GPT2LMHeadModel

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64,
          7: np.float32, 8: np.uint16}


def read_indexed(prefix):
    with open(prefix + ".idx", "rb") as f:
        assert f.read(9) == b"MMIDIDX\x00\x00", "not an MMIDIDX index"
        (version,) = struct.unpack("<Q", f.read(8))
        assert version == 1
        (code,) = struct.unpack("<B", f.read(1))
        (count,) = struct.unpack("<Q", f.read(8))
        struct.unpack("<Q", f.read(8))
        offset = f.tell()
    idx = np.memmap(prefix + ".idx", mode="r", dtype=np.uint8)
    sizes = np.frombuffer(idx, dtype=np.int32, count=count, offset=offset)
    pointers = np.frombuffer(idx, dtype=np.int64, count=count, offset=offset + sizes.nbytes)
    dtype = DTYPES[code]
    data = np.memmap(prefix + ".bin", mode="r", dtype=np.uint8)

    def get(i, start=0, length=None):
        n = int(sizes[i]) - start if length is None else length
        return np.frombuffer(data, dtype=dtype, count=n,
                             offset=int(pointers[i]) + start * np.dtype(dtype).itemsize)
    return get


def one(pattern):
    found = glob.glob(pattern)
    assert len(found) == 1, f"expected one file for {pattern}, found {found}"
    return np.load(found[0])


def main():
    hf_dir, prefix, cache, seq, n, expected = sys.argv[1:7]
    tol = float(sys.argv[7]) if len(sys.argv) > 7 else 1e-5
    seq, n, expected = int(seq), int(n), float(expected)
    get = read_indexed(prefix)
    base = glob.escape(cache) + "/*_valid_indexmap_*"
    doc_idx, sample_idx, shuffle_idx = (one(base + f"_{k}_idx.npy") for k in ("doc", "sample", "shuffle"))
    samples = []
    for j in range(n):  # Megatron's legacy GPTDataset.__getitem__
        i = shuffle_idx[j]
        (df, of), (dl, ol) = sample_idx[i], sample_idx[i + 1]
        if df == dl:
            parts = [get(doc_idx[df], of, ol - of + 1)]
        else:
            parts = [get(doc_idx[df], of)] + [get(doc_idx[d]) for d in range(df + 1, dl)]
            parts.append(get(doc_idx[dl], 0, ol + 1))
        s = np.concatenate(parts).astype(np.int64)
        assert len(s) == seq + 1, len(s)
        samples.append(s)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = GPT2LMHeadModel.from_pretrained(hf_dir, torch_dtype=torch.float32).to(dev).eval()
    x = torch.tensor(np.stack(samples), device=dev)
    losses = []
    with torch.no_grad():
        for b in range(0, n, 8):
            chunk = x[b:b + 8]
            logits = model(chunk[:, :-1]).logits.float()
            ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                   chunk[:, 1:].reshape(-1), reduction="none")
            losses.append(ce.double())
    got = torch.cat(losses).mean().item()
    rel = abs(got - expected) / expected
    print(f"hf_parity: transformers GPT2LMHeadModel loss {got:.7e} on {n} validation samples; "
          f"gpt-train {expected:.7e}; relative difference {rel:.2e} (tolerance {tol:.0e})")
    sys.exit(0 if rel <= tol else 1)


if __name__ == "__main__":
    main()
