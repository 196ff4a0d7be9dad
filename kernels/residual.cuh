// Residual add (ops.h: residual_forward / residual_backward).
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// out[i] = a[i] + b[i] (out may alias a or b)
void residual_forward(float* out, const float* a, const float* b, int N);
// da[i] += dout[i]; db[i] += dout[i]
void residual_backward(float* da, float* db, const float* dout, int N);

}  // namespace gpt::cuda
