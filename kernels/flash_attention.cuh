// Flash-style fused causal attention on bf16 or fp16 tensor cores (the --bf16 and --fp16 paths'
// attention).
//
// Same mathematics as attention.cuh (softmax(q·kᵀ/sqrt(hs)) · v, causal), but nothing of size
// T×T is ever stored: the forward streams 64-key tiles with an online softmax (FlashAttention-2)
// and saves, per query row, the base-2 logsumexp of the scaled scores (lse [B,NH,T]) instead of
// att [B,NH,T,T]. q, k, v are read straight from the bf16 (or fp16) qkv [B,T,3C]; products run on
// mma.sync m16n8k16 (bf16 or fp16 operands, fp32 accumulation; sm_80+; the kernels are templates
// over the element type in flash_attention_kernels.cuh). On sm_90 devices bf16 head sizes 64, 96
// and 128 run the wgmma kernels of flash_attention_sm90.cuh instead: the same forward, and a
// backward fused into one kernel (dQ summed through L2 in a fixed order instead of recomputed by a
// dQ kernel).
//
// Data movement (all kernels): 16-byte cp.async copies (8-byte when hs % 8 != 0) into padded
// shared tiles [rows][HSP+8] (no bank conflicts for ldmatrix), double-buffered: the next tile is
// in flight while the current one is multiplied. Operand fragments come from ldmatrix, and
// ldmatrix.trans where a product needs the transpose (V in P·V, K in dS·K, Q and dO in the dK/dV
// products), so no transposed copies are stored. Tiles are launched longest causal row first
// across all heads (tile index in grid.y); tiles a warp cannot see are skipped and only the
// diagonal ones are masked.
//
// Forward: 128 query rows per block, 4 warps × 32 rows (Q fragments in registers); head sizes
// over 64 take the tile shape of KernelConfig::flash_tiles (kernels/flash_tiles.h: rows per
// block, K/V rows per iteration, warps; gpt-train --flash-tiles), for all three kernels.
// Backward (deterministic, no atomics, fixed order; every element of dqkv written once, bf16):
//   1. dQ, 64 query rows per block (4 warps × 16 rows, Q and dO fragments in registers) over the
//      key tiles at or below the diagonal, recomputing P; it also computes D = rowsum(dO∘O) of
//      its rows from shared memory and writes it to scratch.
//   2. dK/dV, 64 keys per block (4 warps × 16 keys, K and V fragments in registers) over the
//      query tiles at or after the diagonal; Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ are formed transposed so
//      Pᵀ and dSᵀ stay in registers as the A operands of dV += Pᵀ·dO and dK += dSᵀ·Q.
//
// Supported when hs = C/NH is a multiple of 4 and at most 128 (flash_attention_supported: GPT-2
// has hs = 64; Megatron's 1.7B 96, GPT-3 XL and NeMo's larger presets 128); the head dimension is
// padded with zeros to 16, 32, 64, 80, 96 or 128 inside the kernels, one instantiation each (up
// to 64 with one tile configuration; above 64 one per tile shape of kFlashTiles).
// Other head sizes keep the materialising attention.cuh path.
//
// Attention dropout (ops.h): instantiations of the same kernels with the keep bit of
// kernels/dropout_mask.h computed per (query, key) in the forward and again in both backward
// kernels (no mask stored); without dropout the kernels are today's, bit for bit.
#pragma once

#include <cstdint>

#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"
#include "kernels/flash_tiles.h"

namespace gpt::cuda {

using gpt::kFlashMaxHeadSize;

bool flash_attention_supported(int C, int NH);

// Head sizes 64, 96 and 128 on a compute capability 9.0 device (H100, H200) run the wgmma kernels
// of kernels/sm90/flash_attention_sm90.cuh (same results up to rounding, the same dropout mask,
// also deterministic) unless the thread's KernelConfig::sm90_attention is off. Whether a bf16
// call with these shapes on the current device runs them:
bool flash_attention_uses_hopper(int C, int NH);

// out [B,T,C] bf16 (written), lse [B,NH,T] (written). dropout, key, heads: attention dropout
// (ops.h).
void flash_attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH,
                             float dropout = 0.0f, DropKey key = {}, HeadRange heads = {});
// dqkv [B,T,3C] = gradient w.r.t. q, k and v (written, bf16); out and lse as the forward wrote
// them; dout [B,T,C] bf16. dbias [3C] (may be null): the qkv bias gradient, the column sums of
// the stored dqkv, is added to it, with bias_grad's bits (summed inside the wgmma kernels).
// dropout, key and heads as the forward's.
void flash_attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out,
                              const float* lse, int B, int T, int C, int NH,
                              float* dbias = nullptr, float dropout = 0.0f, DropKey key = {},
                              HeadRange heads = {});

// The same with fp16 q, k, v, out and gradients (--fp16): always the mma.sync kernels (the wgmma
// ones are bf16 only), the same tiles, dropout mask and order of operations as bf16's. The
// backward has no bias argument: the --fp16 path sums the qkv bias gradient from its fp32 copy.
void flash_attention_forward(fp16* out, float* lse, const fp16* qkv, int B, int T, int C, int NH,
                             float dropout = 0.0f, DropKey key = {}, HeadRange heads = {});
void flash_attention_backward(fp16* dqkv, const fp16* dout, const fp16* qkv, const fp16* out,
                              const float* lse, int B, int T, int C, int NH,
                              float dropout = 0.0f, DropKey key = {}, HeadRange heads = {});

}  // namespace gpt::cuda
