// Sum of squares in double for the global gradient norm (ops.h: sum_squares), deterministic:
// one block per fixed 64K-element chunk (fixed thread-to-element map and tree order), then one
// block adds the chunk sums in a fixed order. The result depends on n alone, not on the GPU.
// x must be 16-byte aligned (read in 16-byte words; cudaMalloc'd buffers are).
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// Waits for the stream and returns the sum to the host.
double sum_squares(const float* x, size_t n);
// Same value, left on the device in *out (no host sync); for a norm folded into later kernels.
void sum_squares_to_device(double* out, const float* x, size_t n);

}  // namespace gpt::cuda
