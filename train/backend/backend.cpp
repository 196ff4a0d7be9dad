#include "train/backend/backend.h"

#include <cmath>
#include <stdexcept>

#include "common/cli/error.h"
#include "kernels/clip_scale.h"

namespace gpt {

Backend::StepEnd Backend::end_step(const AdamWConfig& config, float lr, int step, float clip_grad,
                                   double loss_scale) {
  StepEnd e;
  e.loss = step_loss_;
  step_loss_ = 0.0;
  e.norm = grad_norm() / loss_scale;
  e.updated = std::isfinite(e.norm) && std::isfinite(e.loss);
  if (e.updated)
    adamw_step(config, lr, step, float(clip_scale(float(e.norm), clip_grad) / loss_scale));
  return e;
}

double Backend::take_step_loss() {
  const double l = step_loss_;
  step_loss_ = 0.0;
  return l;
}

namespace {
[[noreturn]] void no_device_step_end(const char* what) {
  throw std::logic_error(std::string(what) + " without device_step_end()");
}
}  // namespace

double* Backend::queue_step_sums(const std::vector<std::pair<size_t, size_t>>&,
                                 const std::vector<size_t>&, size_t, const double*, size_t) {
  no_device_step_end("queue_step_sums");
}
void Backend::queue_step_decision(const double*, size_t, size_t, int, float, double) {
  no_device_step_end("queue_step_decision");
}
void Backend::adamw_range_decided(const AdamWConfig&, float, int, size_t, size_t) {
  no_device_step_end("adamw_range_decided");
}
Backend::StepEnd Backend::read_step_decision(double*, size_t) {
  no_device_step_end("read_step_decision");
}

namespace {
[[noreturn]] void no_stages(const char* what) {
  throw suite::ToolError(std::string(what) + ": pipeline stages are not supported by this backend");
}
}  // namespace

size_t Backend::stage_activation_elements() const { no_stages("stage_activation_elements"); }
dist::DType Backend::stage_activation_dtype() const { no_stages("stage_activation_dtype"); }
float Backend::stage_forward(int, const int*, const int*, const void*, void*) {
  no_stages("stage_forward");
}
void Backend::stage_backward(int, const void*, void*, float) { no_stages("stage_backward"); }
float Backend::stage_forward_loss(const int*, const int*, const void*, void*) {
  no_stages("stage_forward_loss");
}
void* Backend::stage_buffer(int) { no_stages("stage_buffer"); }

#ifndef GPT_HAVE_CUDA
std::string select_cuda_device(int, int, int*) {
  throw suite::ToolError("--device cuda: this gpt-train was built without CUDA (nvcc not found "
                         "or NO_CUDA=1); rebuild with the CUDA toolkit or use --device cpu");
}
#endif

std::unique_ptr<Backend> make_backend(const ModelConfig& config, const ParamLayout& layout,
                                      const BackendOptions& options) {
  if (options.device == "cpu") return make_cpu_backend(config, layout, options);
  if (options.device == "cuda") {
#ifdef GPT_HAVE_CUDA
    return make_cuda_backend(config, layout, options);
#else
    throw suite::ToolError("--device cuda: this gpt-train was built without CUDA (nvcc not found "
                           "or NO_CUDA=1); rebuild with the CUDA toolkit or use --device cpu");
#endif
  }
  throw suite::UsageError("--device must be cpu or cuda, not '" + options.device + "'");
}

}  // namespace gpt
