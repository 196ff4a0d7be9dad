// AdamW update with decoupled weight decay (ops.h: adamw_update), fp32 params and moments.
#pragma once

#include <cstdint>

#include "kernels/adamw_spans.h"
#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// g = grad·grad_scale; m, v updated; p -= lr·(m̂/(sqrt(v̂)+eps) + weight_decay·p). step is 1-based.
// params_h (unless nullptr) receives the bf16 rounding of the updated parameters (the --bf16
// copy, refreshed in the same pass).
void adamw_update(float* params, const float* grads, float* m, float* v, size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale, bf16* params_h = nullptr);

// spans: device copy of adamw_spans(...); weight_decay applies to the spans that decay.
// With device_scale (a StepDecision's grad_scale and update), the gradient factor is read on the device instead
// of grad_scale, and nothing changes where *device_ok is 0. The spans marked split_master read
// and write their parameters as (params_h, params_lo) halves (kernels/master_split.h), not params.
void adamw_update_spans(float* params, const float* grads, float* m, float* v,
                        const AdamWSpan* spans, int n_spans, float lr, float beta1, float beta2,
                        float eps, float weight_decay, int step, float grad_scale,
                        bf16* params_h = nullptr, const float* device_scale = nullptr,
                        const int* device_ok = nullptr, uint16_t* params_lo = nullptr);

// x = 0 over the spans (a device list from adamw_spans(...) for some of the tensors), in one
// launch: the gradients that the backward adds to, where the others are overwritten.
void zero_spans(float* x, const AdamWSpan* spans, int n_spans);

}  // namespace gpt::cuda
