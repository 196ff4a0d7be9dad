// AdamW update with decoupled weight decay (ops.h: adamw_update), fp32 params and moments.
#pragma once

#include <utility>
#include <vector>

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// g = grad·grad_scale; m, v updated; p -= lr·(m̂/(sqrt(v̂)+eps) + weight_decay·p). step is 1-based.
// params_h (unless nullptr) receives the bf16 rounding of the updated parameters (the --bf16
// copy, refreshed in the same pass).
void adamw_update(float* params, const float* grads, float* m, float* v, size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale, bf16* params_h = nullptr);

// The whole model in one launch: the flat buffers cut into spans of at most kAdamWSpan elements,
// each inside one tensor and carrying whether it decays (the same arithmetic per element as
// adamw_update, hence the same bits).
//
// grad_bf16: the span's tensor holds its gradient in bf16, packed into the first half of its
// own fp32 storage (the --bf16 backend's weight gradients of a step with one micro-batch, as
// autocast rounds them): element i's gradient is reinterpret_cast<const bf16*>(grads)[half_base
// + i], half_base being the tensor's first element (a multiple of 4, so that 4 of them are one
// 8-byte word). The update is the one of an fp32 gradient holding the same values.
struct AdamWSpan {
  size_t begin, end;
  int decays;
  int grad_bf16 = 0;
  size_t half_base = 0;
};
inline constexpr size_t kAdamWSpan = 1 << 16;
// tensors: [begin, end) of each tensor in the flat buffer; decays: its weight-decay flag.
std::vector<AdamWSpan> adamw_spans(const std::vector<std::pair<size_t, size_t>>& tensors,
                                   const std::vector<bool>& decays);
// spans with grad_bf16 set (and half_base) on those inside the given tensors, [begin, end) with
// begin a multiple of 4: the tensors whose gradients are packed in bf16.
std::vector<AdamWSpan> with_bf16_grads(std::vector<AdamWSpan> spans,
                                       const std::vector<std::pair<size_t, size_t>>& tensors);
// spans: device copy of adamw_spans(...); weight_decay applies to the spans that decay.
// With device_scale (a StepDecision's grad_scale and update), the gradient factor is read on the device instead
// of grad_scale, and nothing changes where *device_ok is 0.
void adamw_update_spans(float* params, const float* grads, float* m, float* v,
                        const AdamWSpan* spans, int n_spans, float lr, float beta1, float beta2,
                        float eps, float weight_decay, int step, float grad_scale,
                        bf16* params_h = nullptr, const float* device_scale = nullptr,
                        const int* device_ok = nullptr);

// x = 0 over the spans (a device list from adamw_spans(...) for some of the tensors), in one
// launch: the gradients that the backward adds to, where the others are overwritten.
void zero_spans(float* x, const AdamWSpan* spans, int n_spans);

}  // namespace gpt::cuda
