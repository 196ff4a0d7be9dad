// The end of a training step decided on the device (Backend::end_step): the step's loss summed
// over its micro-batches, then the gradient norm, whether to update and the clipping factor,
// with the host's arithmetic (trainer.cpp, ops.h clip_scale), so the bits are the host path's.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// *acc = (first ? 0 : *acc) + double(*loss / float(accum)), the trainer's sum of its
// micro-batches' mean losses.
void add_step_loss(double* acc, const float* loss, int accum, bool first);

// From the step's loss and the gradients' sum of squares: out[0] = loss, out[1] = norm =
// sqrt(sum_sq) / loss_scale, out[2] = 1 when both are finite (the update runs), 0 otherwise;
// *ok = out[2]; *grad_scale = float(clip_scale(float(norm), clip_grad) / loss_scale), what AdamW
// multiplies the gradients by.
void decide_step(double* out, float* grad_scale, int* ok, const double* loss,
                 const double* sum_sq, float clip_grad, double loss_scale);

}  // namespace gpt::cuda
