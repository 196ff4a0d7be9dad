// One interface for the device that runs the model: cpu (fp32 reference, train/backend/cpu/) and
// cuda (train/backend/cuda/ + kernels/, built only with nvcc; GPT_HAVE_CUDA).
//
// A backend owns the parameters, gradients, AdamW moments and activations of one model replica
// for a fixed micro-batch shape [B, T]. The host drives it one micro-batch at a time:
//   zero_grad(); for each micro-batch: forward_backward(...); norm = grad_norm(); adamw_step(...)
// Host-side copies (get_/set_) exist for checkpoints, export and tests; they are not per-step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/kernel_config.h"
#include "train/model/config.h"
#include "train/model/layout.h"

namespace gpt {

struct BackendOptions {
  std::string device = "cpu";      // cpu | cuda
  int micro_batch = 1;             // B
  bool bf16 = false;               // mixed precision request (CUDA backend; CPU computes fp32)
  bool fp16 = false;
  bool recompute_activations = false;
  // --bf16: the first N layers recompute their GELU output (fc2's input) in backward instead of
  // keeping it; -1: every layer. Each kept layer holds B·T·ffn bf16 more.
  int recompute_gelu_layers = -1;
  float hidden_dropout = 0.0f;     // --hidden-dropout: embeddings, attention and MLP outputs
  // CUDA: rows of the output layer per chunk (bounds the logits: 4096 × 50304 bf16 are 412 MB;
  // fewer, larger chunks re-read the fp32 wte gradient fewer times).
  int classifier_rows = 4096;
  KernelConfig kernels;  // CUDA: which kernel where there is a choice (--cuda-graphs, ...)
};

struct AdamWConfig {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
};

struct MemoryStats {
  double allocated_mb = 0, max_allocated_mb = 0, reserved_mb = 0, max_reserved_mb = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Parameters and optimizer state as host fp32 arrays of layout.total() elements.
  virtual void set_params(const float* host) = 0;
  virtual void get_params(float* host) const = 0;
  virtual void set_optimizer_state(const float* m, const float* v) = 0;
  virtual void get_optimizer_state(float* m, float* v) const = 0;
  virtual void get_grads(float* host) const = 0;

  virtual void zero_grad() = 0;
  // Key of the dropout masks of the next forward_backward (dropout_mask.h); forward_loss
  // (evaluation) never drops.
  void set_dropout_key(uint64_t key) { dropout_key_ = key; }
  // One micro-batch: inputs/targets are [B, T] host token ids. Accumulates dL/dθ · loss_weight
  // per token into the gradients (loss_weight = 1 / (B·T·grad_accum) gives the mean over the
  // global batch). Returns the mean loss over this micro-batch's B·T tokens.
  virtual float forward_backward(const int* inputs, const int* targets, float loss_weight) = 0;
  // Forward only (evaluation): mean loss over the micro-batch.
  virtual float forward_loss(const int* inputs, const int* targets) = 0;
  // L2 norm of all gradients (deterministic).
  virtual double grad_norm() = 0;
  // AdamW over all parameters; weight decay only on weights and embeddings (not biases, norms).
  // grad_scale multiplies the gradients first (clipping). step is 1-based.
  virtual void adamw_step(const AdamWConfig& config, float lr, int step, float grad_scale) = 0;

  // A training step's micro-batches and update, as the trainer runs them. queue_micro_batch is
  // forward_backward whose loss (divided by `accum`, the step's micro-batch count) is added to
  // the step's loss; end_step then measures the gradient norm (divided by loss_scale, the fp16
  // loss scale or 1) and, when it and the step's loss are finite, runs AdamW with the gradients
  // clipped to clip_grad (0: no clipping) and divided by loss_scale. These defaults call the
  // functions above in that order; the CUDA backend decides on the device and waits only for the
  // loss and norm while the update runs, so the GPU never waits for the host within a step.
  struct StepEnd {
    double loss = 0.0, norm = 0.0;
    bool updated = false;  // false: the loss or the norm was not finite, nothing was changed
  };
  virtual void queue_micro_batch(const int* inputs, const int* targets, float loss_weight,
                                 int accum) {
    step_loss_ += forward_backward(inputs, targets, loss_weight) / accum;
  }
  virtual StepEnd end_step(const AdamWConfig& config, float lr, int step, float clip_grad,
                           double loss_scale);

  virtual MemoryStats memory() const = 0;
  // Dense bf16/fp32 peak of the device in TFLOP/s for MFU, 0 when unknown (CPU).
  virtual double peak_tflops() const = 0;
  // Starts / stops the device profiler's capture range (--profile); nothing on the CPU.
  virtual void profiler(bool on) {}

 protected:
  uint64_t dropout_key_ = 0;
  double step_loss_ = 0.0;  // the queued micro-batches' share of the step's loss
};

// Makes the backend named by options.device. Throws suite::UsageError for an unknown device and
// suite::ToolError when cuda is asked of a build without CUDA.
std::unique_ptr<Backend> make_backend(const ModelConfig& config, const ParamLayout& layout,
                                      const BackendOptions& options);

std::unique_ptr<Backend> make_cpu_backend(const ModelConfig& config, const ParamLayout& layout,
                                          const BackendOptions& options);
#ifdef GPT_HAVE_CUDA
// Defined by the CUDA backend (train/backend/cuda/cuda_backend.cu). A plain (strong) reference:
// a weak one would not pull that object out of libtrain.a into gpt-train.
std::unique_ptr<Backend> make_cuda_backend(const ModelConfig& config, const ParamLayout& layout,
                                           const BackendOptions& options);
#endif

}  // namespace gpt
