// Hidden dropout (ops.h: dropout_forward / dropout_backward), with the counter-based mask of
// kernels/dropout_mask.h, so the CUDA and CPU backends drop the same elements.
#pragma once

#include <cstdint>

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// x[i] = keep(i) ? x[i] / (1 - p) : 0
void dropout_forward(float* x, size_t n, float p, uint64_t key);
// dinp[i] = keep(i) ? dout[i] / (1 - p) : 0 (WRITES; dinp may equal dout)
void dropout_backward(float* dinp, const float* dout, size_t n, float p, uint64_t key);

}  // namespace gpt::cuda
