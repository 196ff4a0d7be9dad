// Hopper versions of the flash attention kernels (kernels/sm90/flash_attention_sm90.cu): the same
// mathematics and tiles as flash_attention.cu, with the products on wgmma (sm_90a) instead of
// mma.sync; the forward in the same order of operations (same bits), the backward fused into one
// kernel (deterministic, but its own rounding). Used by flash_attention.cu for head sizes 64, 96
// and 128 on sm_90 devices; everything else keeps the generic kernels.
#pragma once

#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"

namespace gpt::cuda {

// Head size C / NH 64, 96 or 128, qkv/out/dout 16-byte aligned, B·NH ≤ 65535. sl2 =
// log2(e)/sqrt(hs), scale = 1/sqrt(hs); attention dropout with probability `dropout` (0: none)
// under flash_dropout.cuh's mask of `key` (heads: the NH heads' place among the model's, ops.h),
// the same elements as the generic kernels drop.
// bias_partial (may be null; T % 64 == 0): [B·T/64, 3C], written with the column sums of each
// 64-row chunk of dqkv as stored, in bias_grad's order (column_sum_finish then adds them up).
void flash_sm90_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH,
                        float sl2, float dropout, DropKey key, HeadRange heads = {});
// One pass for dQ, dK and dV (dQ summed over the key tiles in a fixed order through an fp32
// accumulator in L2), so results differ from the generic kernels' in rounding only, and are the
// same bits run to run.
void flash_sm90_backward(bf16* dqkv, float* bias_partial, const bf16* dout, const bf16* qkv,
                         const bf16* out, const float* lse, int B, int T, int C, int NH, float sl2,
                         float scale, float dropout, DropKey key, HeadRange heads = {});

}  // namespace gpt::cuda
