// Hidden dropout (ops.h: dropout_forward / dropout_backward), with the counter-based mask of
// kernels/dropout_mask.h, so the CUDA and CPU backends drop the same elements; and the two passes
// the --bf16 path would follow it with, fused in (the same bits as the separate kernels).
#pragma once

#include <cstdint>

#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"

namespace gpt::cuda {

// x[i] = keep(first + i) ? x[i] / (1 - p) : 0; first: the offset of x[0] in the tensor the mask
// covers (a sequence-parallel rank's rows), as ops.h's.
void dropout_forward(float* x, size_t n, float p, DropKey key, uint64_t first = 0);
// dinp[i] = keep(first + i) ? dout[i] / (1 - p) : 0 (WRITES; dinp may equal dout)
void dropout_backward(float* dinp, const float* dout, size_t n, float p, DropKey key,
                      uint64_t first = 0);
// out[i] = (keep(first + i) ? x[i] / (1 - p) : 0) + residual[i]: dropout_forward, then
// residual_forward (out may equal x or residual).
void dropout_residual_forward(float* out, const float* x, const float* residual, size_t n, float p,
                              DropKey key, uint64_t first = 0);
// dropout_backward, also writing the bf16 rounding of dinp to dinp_h (to_bf16's).
void dropout_backward_bf16(float* dinp, bf16* dinp_h, const float* dout, size_t n, float p,
                           DropKey key, uint64_t first = 0);

// *slot = key, queued on the stream: the micro-batch key that DropKey::on_device keys read, set
// outside a CUDA graph before each replay (its kernels' arguments stay those of the capture).
void store_dropout_key(uint64_t* slot, uint64_t key);

}  // namespace gpt::cuda
