// Causal multi-head self-attention core (ops.h: attention_forward / attention_backward).
//
// Simple, correct version (llm.c's cuBLAS formulation): q, k, v are permuted to [B,NH,T,hs] in
// scratch, the scores and products are strided-batched fp32 GEMMs over the B·NH heads, and the
// causal softmax (forward) and its backward are one warp per row. att [B,NH,T,T] holds the
// probabilities (zeros above the diagonal) and is saved for backward, as the contract says.
// The GEMMs compute the full T×T square (the masked half is wasted work); a fused flash-style
// kernel is the planned replacement.
#pragma once

#include <cstdint>

#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"

namespace gpt::cuda {

// With attention dropout (0 < dropout < 1, ops.h) the product with v uses a dropped copy of att
// in T×T scratch (dropout_mask.h's attention_keep); att keeps the probabilities.
// heads: the NH heads' place among the model's (ops.h).
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       float dropout = 0.0f, DropKey key = {}, HeadRange heads = {});
// dqkv [B,T,3C] += gradient w.r.t. q, k and v.
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, float dropout = 0.0f, DropKey key = {},
                        HeadRange heads = {});

}  // namespace gpt::cuda
