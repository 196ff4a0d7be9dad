#!/usr/bin/env python3
"""PyTorch GPT-2 pretraining reference for scripts/bench/train_vs_torch.sh.

The same shapes and step as gpt-train --bf16 on mock data: GPT-2 (pre-LayerNorm, tanh GELU,
tied embeddings, vocabulary padded to a multiple of 128), random tokens, bf16 autocast,
torch.compile, SDPA restricted to the flash backend, fused AdamW (betas 0.9/0.95, weight decay
0.1 on matrices), gradient clipping at 1.0. Times windows of --iters steps after --warmup
steps, until --min-seconds have passed since the first timed step (at least one window), and
prints one JSON line (under torchrun with WORLD_SIZE > 1: DistributedDataParallel over NCCL, one
GPU per rank, each rank its own micro-batch; rank 0 prints the line, tokens/s of all ranks and
"max_allocated_mb_per_rank"):
  {"tokens_per_second": (over the second half of the windows), "first_window_tokens_per_second": ...,
   "window_tokens_per_second": [...], "ms_per_iter": ..., "max_allocated_mb": ..., "params": ...}
"""
import argparse
import json
import math
import time

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, nh):
        super().__init__()
        self.nh = nh
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, d, nh, vocab, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, nh) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        for n, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if n.endswith(("proj.weight", "fc2.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif n.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = F.linear(self.lnf(x), self.wte.weight)  # tied output layer
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--micro-batch", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--min-seconds", type=float, default=0.0)
    a = ap.parse_args()

    torch.manual_seed(1234)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.enable_flash_sdp(True)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_math_sdp(False)
    if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
        torch.backends.cuda.enable_cudnn_sdp(False)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl")
        torch.manual_seed(1234 + rank)  # each rank its own tokens; DDP broadcasts rank 0's weights
    dev = torch.device("cuda")
    vocab = (a.vocab + 127) // 128 * 128
    model = GPT(a.layers, a.hidden, a.heads, vocab, a.seq).to(dev)
    params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    # DDP first, then compile (PyTorch's recommended order: the compiled graph is split at DDP's
    # buckets so their all-reduces overlap the backward).
    wrapped = model
    if world > 1:
        wrapped = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    cmodel = torch.compile(wrapped)

    def step():
        x = torch.randint(0, a.vocab, (a.micro_batch, a.seq), device=dev)
        y = torch.randint(0, a.vocab, (a.micro_batch, a.seq), device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = cmodel(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    windows = []  # tokens/s of each window of a.iters steps
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        for _ in range(a.iters):
            loss = step()
        loss.item()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        windows.append(world * a.micro_batch * a.seq * a.iters / (t1 - t0))
        if t1 - start >= a.min_seconds:
            break
    # Steady state: the windows of the second half (all their tokens over all their time).
    late = windows[len(windows) // 2:]
    tps = len(late) / sum(1.0 / w for w in late)
    dt = world * a.micro_batch * a.seq / tps
    peak_mb = torch.cuda.max_memory_allocated() / 2**20
    per_rank = [peak_mb]
    if world > 1:
        per_rank = [None] * world
        dist.all_gather_object(per_rank, peak_mb)
        dist.destroy_process_group()
        if rank != 0:
            return
    print(json.dumps({
        "tokens_per_second": tps,
        "first_window_tokens_per_second": windows[0],
        "window_tokens_per_second": [round(w) for w in windows],
        "ms_per_iter": dt * 1e3,
        "max_allocated_mb": peak_mb,
        "max_allocated_mb_per_rank": [round(m, 1) for m in per_rank],
        "world_size": world,
        "params": params,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
    }), flush=True)


if __name__ == "__main__":
    main()
