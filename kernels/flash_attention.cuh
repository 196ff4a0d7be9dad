// Flash-style fused causal attention on bf16 tensor cores (the --bf16 path's attention).
//
// Same mathematics as attention.cuh (softmax(q·kᵀ/sqrt(hs)) · v, causal), but nothing of size
// T×T is ever stored: the forward streams 64-key tiles through shared memory with an online
// softmax (FlashAttention-2) and saves, per query row, the base-2 logsumexp of the scaled scores
// (lse [B,NH,T]) instead of att [B,NH,T,T]. q, k, v are read straight from the bf16 qkv
// [B,T,3C] (the QKV projection's bf16 output); the products run on mma.sync m16n8k16
// (bf16 operands, fp32 accumulation; sm_80+).
//
// Backward (deterministic, no atomics): D = rowsum(dout ∘ out) first, then one kernel per
// 64-key tile computes dK and dV by iterating over the query tiles at or below the diagonal,
// and one kernel per 64-query tile computes dQ by iterating over the key tiles; each element
// of dqkv is written by exactly one thread, once (bf16, the input of the QKV projection's backward).
//
// Supported when hs = C/NH is a multiple of 4 and at most 64 (flash_attention_supported: every
// GPT-2 size has hs = 64); the head dimension is padded with zeros to 16, 32 or 64 inside the
// kernels. Other head sizes keep the materialising attention.cuh path.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

bool flash_attention_supported(int C, int NH);

// out [B,T,C] bf16 (written), lse [B,NH,T] (written).
void flash_attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH);
// dqkv [B,T,3C] = gradient w.r.t. q, k and v (written, bf16); out and lse as the forward wrote
// them; dout [B,T,C] bf16.
void flash_attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out,
                              const float* lse, int B, int T, int C, int NH);

}  // namespace gpt::cuda
