// x[i] *= s (ops.h: scale_inplace).
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

void scale_inplace(float* x, size_t n, float s);

}  // namespace gpt::cuda
