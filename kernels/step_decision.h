// The end of a step as the device decides it (kernels/step_end.cuh), as plain C++ so that the
// buffer plan (train/backend/cuda/buffer_plan.cpp) can size it without CUDA.
#pragma once

namespace gpt::cuda {

// What the host reads back, and AdamW reads its gradient factor and flag from
// (adamw_update_spans' device_scale, device_ok).
struct StepDecision {
  double loss, norm;  // the step's loss; sqrt(sum_sq) / loss_scale
  float grad_scale;   // float(clip_scale(float(norm), clip_grad) / loss_scale)
  int update;         // 1 when the loss and the norm are finite, 0 (skip the step) otherwise
};

}  // namespace gpt::cuda
