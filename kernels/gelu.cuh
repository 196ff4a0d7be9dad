// GELU, tanh approximation (ops.h: gelu_forward / gelu_backward), N elements.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

void gelu_forward(float* out, const float* inp, int N);
// dinp[i] += gelu'(inp[i]) * dout[i]
void gelu_backward(float* dinp, const float* inp, const float* dout, int N);

}  // namespace gpt::cuda
