// The end of a training step decided on the device (Backend::end_step): the step's loss summed
// over its micro-batches, then the gradient norm, whether to update and the clipping factor,
// with the host's arithmetic (train/backend/backend.cpp, kernels/clip_scale.h), so the bits are the host path's.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// *acc = (first ? 0 : *acc) + double(*loss / float(accum)), the trainer's sum of its
// micro-batches' mean losses.
void add_step_loss(double* acc, const float* loss, int accum, bool first);

// What the host reads back, and AdamW reads its gradient factor and flag from
// (adamw_update_spans' device_scale, device_ok).
struct StepDecision {
  double loss, norm;  // the step's loss; sqrt(sum_sq) / loss_scale
  float grad_scale;   // float(clip_scale(float(norm), clip_grad) / loss_scale)
  int update;         // 1 when the loss and the norm are finite, 0 (skip the step) otherwise
};
void decide_step(StepDecision* out, const double* loss, const double* sum_sq, float clip_grad,
                 double loss_scale);

}  // namespace gpt::cuda
