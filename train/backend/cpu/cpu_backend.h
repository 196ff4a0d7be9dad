// The CPU backend: GPT forward/backward composed from the fp32 ops in ops.h, for the whole model or
// one pipeline stage and tensor-parallel rank (BackendOptions::stage; cpu_backend_tp.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/dropout_mask.h"
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
  // Pipeline stages.
  size_t stage_activation_elements() const override;
  dist::DType stage_activation_dtype() const override { return dist::DType::kF32; }
  float stage_forward(int slot, const int* inputs, const int* targets, const void* act_in,
                      void* act_out) override;
  void stage_backward(int slot, const void* dact_out, void* dact_in, float loss_weight) override;
  float stage_forward_loss(const int* inputs, const int* targets, const void* act_in,
                           void* act_out) override;
  void* stage_buffer(int which) override;
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
  // Saved activations of one layer for the backward pass. Rows: R = the rows of the residual
  // stream this rank holds (B·T, or B·T/tp with sequence parallelism); BT = B·T.
  struct LayerActs {
    std::vector<float> ln1,   // [BT, C] (gathered over TP with sequence parallelism)
        ln1_mean, ln1_rstd,   // [R]
        qkv,                  // [BT, 3·C/tp]: this rank's heads, [q | k | v]
        atty,                 // [BT, C/tp]
        att,                  // [B, NH/tp, T, T]
        res2,                 // [R, C]
        ln2, ln2_mean, ln2_rstd, fch, fch_gelu,  // as ln1; fch, fch_gelu [BT, F/tp]
        res3;                 // [R, C]
  };
  // One micro-batch in flight through this stage.
  struct Slot {
    bool allocated = false, busy = false;
    uint64_t dropout_key = 0;
    std::vector<int> tokens, targets;      // [B, T]: first stage's inputs, last stage's targets
    std::vector<float> input;              // [R, C]: the embedding output or the received act_in
    std::vector<LayerActs> layers;
    std::vector<float> lnf_mean, lnf_rstd;  // [R]
    std::vector<float> lnf;                 // [BT, C] (gathered)
    std::vector<float> logits;              // [BT, Vp/tp]; dlogits in place after backward
    std::vector<float> lse, losses;         // [BT]
  };
  Slot& slot(int i);  // allocates on first use
  // Forward through the stage; returns the mean loss on the last stage (0 elsewhere).
  float forward(Slot& s, const int* inputs, const int* targets, const void* act_in, void* act_out,
                bool training);
  void backward(Slot& s, const void* dact_out, void* dact_in, float loss_weight);

  // ---- Tensor parallelism (cpu_backend_tp.cpp); every collective is a no-op at tp = 1.
  // Sequence parallelism: x [BT, C] whose rows [row0, row0 + R) are this rank's → all of x.
  void gather_rows(float* x, size_t width);
  // d [R, C] → [BT, C]: d itself without sequence parallelism, else gathered into dfull_.
  const float* full_rows(const float* d);
  // Partial sums full [BT, C] → their sum over TP, in `out` [R, C] (may equal full without SP).
  void reduce_rows(float* full, float* out, size_t width);
  // Word embedding of this rank's vocabulary rows (+ position embedding) → s.input.
  void embedding_forward(Slot& s, const int* inputs, bool training);
  void embedding_backward(Slot& s, const float* dinput);
  // Attention core over this rank's heads (masks keyed by the global head index).
  void attention_fwd(LayerActs& a, int global_layer, uint64_t key, bool training);
  void attention_bwd(const LayerActs& a, int global_layer, uint64_t key);
  HeadRange rank_heads() const;
  // Vocabulary-parallel cross-entropy over s.logits: s.lse and s.losses; the mean loss.
  float cross_entropy_forward(Slot& s);
  // s.logits ← dloss · (softmax − onehot), padded columns 0.
  void cross_entropy_backward(Slot& s, float dloss);
  // Hidden dropout on this rank's rows of a [BT, C] tensor (the one-GPU mask).
  void dropout_rows(float* x, size_t rows, uint64_t site_key);
  void dropout_rows_backward(float* dx, const float* d, size_t rows, uint64_t site_key);
  // Sequence parallelism: the replicated tensors' gradients of one backward summed over TP.
  void begin_sp_grads();
  void end_sp_grads();
  // Row-parallel layers add their bias after the TP reduction: x[r, :] += bias, and its gradient.
  void add_bias(float* x, const float* bias, size_t rows);
  void bias_backward(float* dbias, const float* dout, size_t rows);

  ModelConfig cfg_;
  ParamLayout layout_;
  StageSpec stage_;
  dist::Communicator* tp_comm_;
  int B_, T_;
  int tp_ = 1, tp_rank_ = 0;
  bool sp_ = false;                  // sequence parallelism with tp > 1
  size_t BT_ = 0, R_ = 0, row0_ = 0;  // rows: all, this rank's, its first
  int C_ = 0, Cl_ = 0, Fl_ = 0, NHl_ = 0, Vl_ = 0;  // hidden, local qkv third, ffn, heads, vocab
  float dropout_;      // hidden dropout probability (training only)
  float att_dropout_;  // attention dropout probability (training only)
  std::vector<float> params_, grads_;  // layout.total() + flat_padding each
  OptimizerShard shard_;               // the moments kept (all, or the distributed optimizer's)
  std::vector<float> m_, v_;           // shard_.size() each
  std::vector<uint16_t> bf16_scratch_;          // --grad-reduce-in-bf16
  bool shard_master_ = false;
  std::vector<float> staging_;  // gather_staging
  std::vector<Slot> slots_;            // pipeline_slots + 1 (the last: stage_forward_loss)
  std::vector<std::vector<float>> stage_buffers_;
  // Gradient scratch, reused by every layer.
  std::vector<float> dres_, dln_, dfch_gelu_, dfch_, datty_, dqkv_, dbranch_, dfull_, tmp_;
  std::vector<float> sp_saved_;        // begin/end_sp_grads
};

}  // namespace gpt
