// The CPU backend: GPT forward/backward composed from the fp32 ops in ops.h.
#pragma once

#include <cstdint>
#include <vector>

#include "train/backend/backend.h"
#include "train/backend/optimizer_shard.h"

namespace gpt {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const ModelConfig& config, const ParamLayout& layout, const BackendOptions& options);

  std::string name() const override { return "cpu"; }
  void set_params(const float* host) override;
  void get_params(float* host) const override;
  void set_optimizer_state(const float* m, const float* v) override;
  void get_optimizer_state(float* m, float* v) const override;
  void get_grads(float* host) const override;
  void zero_grad() override;
  float forward_backward(const int* inputs, const int* targets, float loss_weight) override;
  float forward_loss(const int* inputs, const int* targets) override;
  double grad_norm() override;
  void adamw_step(const AdamWConfig& config, float lr, int step, float grad_scale) override;
  MemoryStats memory() const override;
  double peak_tflops() const override { return 0.0; }
  // Data parallelism (cpu_backend_dist.cpp).
  FlatBuffers flat_buffers() override;
  double grad_sum_squares(size_t begin, size_t end) override;
  void adamw_range(const AdamWConfig& config, float lr, int step, float grad_scale, size_t begin,
                   size_t end) override;
  void* grads_to_bf16(size_t begin, size_t end, size_t capacity) override;
  void grads_from_bf16(const void* scratch, size_t begin, size_t end) override;
  // BackendOptions::shard_master: the fp32 compute copy is params_ itself, so only the data flow
  // is the CUDA backend's (gathers through the staging, get_params through the ranks).
  bool shards_master() const override { return shard_master_; }
  float* gather_staging(size_t n) override;
  void params_from_staging(const float* staging, int D, size_t m, size_t begin, size_t stride,
                           bool on_comm) override;
  void read_staging(float* host, const float* staging, size_t n) override;

 private:
  // Saved activations of one layer for the backward pass.
  struct LayerActs {
    std::vector<float> ln1, ln1_mean, ln1_rstd, qkv, atty, att, res2, ln2, ln2_mean, ln2_rstd, fch,
        fch_gelu, res3;
  };
  void forward(const int* inputs, bool training);  // fills activations and logits
  void backward(const int* inputs, float loss_weight);

  ModelConfig cfg_;
  ParamLayout layout_;
  int B_, T_;
  float dropout_;      // hidden dropout probability (training only)
  float att_dropout_;  // attention dropout probability (training only)
  std::vector<float> params_, grads_;  // layout.total() + flat_padding each
  OptimizerShard shard_;               // the moments kept (all, or the distributed optimizer's)
  std::vector<float> m_, v_;           // shard_.size() each
  std::vector<uint16_t> bf16_scratch_;          // --grad-reduce-in-bf16
  bool shard_master_ = false;
  std::vector<float> staging_;  // gather_staging
  std::vector<LayerActs> acts_;
  std::vector<float> encoded_, lnf_, lnf_mean_, lnf_rstd_, logits_, losses_;
  // Gradient scratch, reused by every layer.
  std::vector<float> dres_, dln_, dfch_gelu_, dfch_, datty_, dqkv_, dbranch_;
};

}  // namespace gpt
