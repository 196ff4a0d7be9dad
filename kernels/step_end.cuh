// The end of a training step decided on the device (Backend::end_step): the step's loss summed
// over its micro-batches, then the gradient norm, whether to update and the clipping factor,
// with the host's arithmetic (train/backend/backend.cpp, kernels/clip_scale.h), so the bits are
// the host path's.
#pragma once

#include "kernels/cuda_common.cuh"
#include "kernels/step_decision.h"

namespace gpt::cuda {

// *acc = (first ? 0 : *acc) + double(*loss / float(accum)), the trainer's sum of its
// micro-batches' mean losses.
void add_step_loss(double* acc, const float* loss, int accum, bool first);

void decide_step(StepDecision* out, const double* loss, const double* sum_sq, float clip_grad,
                 double loss_scale);

// Data parallelism's decision from the ranks' reduced sums: sums[0] the loss summed over the
// data_parallel ranks, sums[first_square, n) the gradient's sums of squares (added in that
// order).
void decide_step_from_sums(StepDecision* out, const double* sums, int n, int first_square,
                           int data_parallel, float clip_grad, double loss_scale);

}  // namespace gpt::cuda
