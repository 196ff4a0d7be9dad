#include "kernels/step_end.cuh"

#include "kernels/clip_scale.h"

namespace gpt::cuda {
namespace {

__global__ void add_step_loss_kernel(double* acc, const float* loss, int accum, bool first) {
  *acc = (first ? 0.0 : *acc) + double(__fdiv_rn(*loss, float(accum)));
}

__global__ void decide_step_kernel(StepDecision* out, const double* loss, const double* sum_sq,
                                   float clip_grad, double loss_scale) {
  const double l = *loss, norm = __dsqrt_rn(*sum_sq) / loss_scale;
  const bool finite = isfinite(l) && isfinite(norm);
  const float factor = clip_scale(float(norm), clip_grad);
  *out = StepDecision{l, norm, float(double(factor) / loss_scale), finite ? 1 : 0};
}

// Data parallelism's decision (train/loop/data_parallel.cpp: step_decision, step_grad_scale):
// the loss summed over the ranks divided by their number, the sums of squares added in slot
// order from zero, as the host adds them.
__global__ void decide_step_from_sums_kernel(StepDecision* out, const double* sums, int n,
                                             int first_square, int data_parallel,
                                             float clip_grad, double loss_scale) {
  double sq = 0;
  for (int i = first_square; i < n; ++i) sq += sums[i];
  const double l = sums[0] / data_parallel, norm = __dsqrt_rn(sq) / loss_scale;
  const bool finite = isfinite(l) && isfinite(norm);
  const float factor = clip_scale(float(norm), clip_grad);
  *out = StepDecision{l, norm, float(double(factor) / loss_scale), finite ? 1 : 0};
}

}  // namespace

void add_step_loss(double* acc, const float* loss, int accum, bool first) {
  add_step_loss_kernel<<<1, 1, 0, stream()>>>(acc, loss, accum, first);
  GPT_CUDA_CHECK_LAUNCH();
}

void decide_step(StepDecision* out, const double* loss, const double* sum_sq, float clip_grad,
                 double loss_scale) {
  decide_step_kernel<<<1, 1, 0, stream()>>>(out, loss, sum_sq, clip_grad, loss_scale);
  GPT_CUDA_CHECK_LAUNCH();
}

void decide_step_from_sums(StepDecision* out, const double* sums, int n, int first_square,
                           int data_parallel, float clip_grad, double loss_scale) {
  decide_step_from_sums_kernel<<<1, 1, 0, stream()>>>(out, sums, n, first_square, data_parallel,
                                                      clip_grad, loss_scale);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
