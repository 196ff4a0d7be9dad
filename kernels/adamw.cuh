// AdamW update with decoupled weight decay (ops.h: adamw_update), fp32 params and moments.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// g = grad·grad_scale; m, v updated; p -= lr·(m̂/(sqrt(v̂)+eps) + weight_decay·p). step is 1-based.
// params_h (unless nullptr) receives the bf16 rounding of the updated parameters (the --bf16
// copy, refreshed in the same pass).
void adamw_update(float* params, const float* grads, float* m, float* v, size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale, bf16* params_h = nullptr);

}  // namespace gpt::cuda
