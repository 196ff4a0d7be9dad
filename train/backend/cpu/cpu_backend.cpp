#include "train/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "common/cli/error.h"
#include "kernels/dropout_mask.h"
#include "kernels/ops.h"

namespace gpt {
namespace {
void zero(std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); }

bool same_stage(const StageSpec& a, const StageSpec& b, const ModelConfig& c) {
  return a.first_layer == b.first_layer && a.layers(c) == b.layers(c) &&
         a.has_embedding == b.has_embedding && a.has_head == b.has_head &&
         a.tp_size == b.tp_size && a.tp_rank == b.tp_rank &&
         a.sequence_parallel == b.sequence_parallel;
}
}  // namespace

CpuBackend::CpuBackend(const ModelConfig& config, const ParamLayout& layout,
                       const BackendOptions& options)
    : cfg_(config),
      layout_(layout),
      stage_(layout.stage()),
      tp_comm_(options.tp_comm),
      B_(options.micro_batch),
      T_(config.seq_length),
      dropout_(options.hidden_dropout),
      att_dropout_(options.attention_dropout) {
  if (!same_stage(options.stage, stage_, cfg_))
    throw std::invalid_argument("cpu backend: BackendOptions::stage differs from the layout's");
  tp_ = stage_.tp_size;
  tp_rank_ = stage_.tp_rank;
  if (tp_ > 1 && (!tp_comm_ || tp_comm_->size() != tp_ || tp_comm_->rank() != tp_rank_))
    throw std::invalid_argument("cpu backend: tensor parallelism needs tp_comm, a group of "
                                "tp_size ranks in which this rank is tp_rank");
  sp_ = stage_.sequence_parallel && tp_ > 1;
  if (sp_ && T_ % tp_ != 0)
    throw suite::UsageError("--sequence-parallel: --tensor-model-parallel-size " +
                            std::to_string(tp_) + " does not divide --seq-length " +
                            std::to_string(T_));
  BT_ = size_t(B_) * T_;
  R_ = sp_ ? BT_ / tp_ : BT_;
  row0_ = sp_ ? size_t(tp_rank_) * R_ : 0;
  C_ = cfg_.hidden_size;
  Cl_ = C_ / tp_;
  Fl_ = cfg_.ffn_hidden_size / tp_;
  NHl_ = cfg_.num_heads / tp_;
  Vl_ = layout_.local_vocab();
  pipeline_slots_ = std::max(1, options.pipeline_slots);

  const size_t n = layout_.total() + options.flat_padding;
  params_.assign(n, 0.0f);
  grads_.assign(n, 0.0f);
  shard_ = OptimizerShard(options.optimizer_shard, n);
  shard_master_ = options.shard_master && !options.optimizer_shard.empty();
  m_.assign(shard_.size(), 0.0f);
  v_.assign(shard_.size(), 0.0f);
  slots_.resize(pipeline_slots_ + 1);
  slot(0);
  const size_t BT = BT_, C = C_;
  dres_.resize(R_ * C);
  dln_.resize(BT * C);
  dfch_gelu_.resize(BT * Fl_);
  dfch_.resize(BT * Fl_);
  datty_.resize(BT * Cl_);
  dqkv_.resize(BT * 3 * Cl_);
  if (dropout_ > 0) dbranch_.resize(R_ * C);
  if (sp_) dfull_.resize(BT * C);
  if (tp_ > 1) tmp_.resize(BT * C);
}

CpuBackend::Slot& CpuBackend::slot(int i) {
  Slot& s = slots_.at(i);
  if (s.allocated) return s;
  const size_t BT = BT_, R = R_, C = C_;
  if (stage_.has_embedding) s.tokens.resize(BT);
  s.input.resize(R * C);
  s.layers.resize(layout_.num_layers());
  for (auto& a : s.layers) {
    a.ln1.resize(BT * C);
    a.ln1_mean.resize(R);
    a.ln1_rstd.resize(R);
    a.qkv.resize(BT * 3 * Cl_);
    a.atty.resize(BT * Cl_);
    a.att.resize(size_t(B_) * NHl_ * T_ * T_);
    a.res2.resize(R * C);
    a.ln2.resize(BT * C);
    a.ln2_mean.resize(R);
    a.ln2_rstd.resize(R);
    a.fch.resize(BT * Fl_);
    a.fch_gelu.resize(BT * Fl_);
    a.res3.resize(R * C);
  }
  if (stage_.has_head) {
    s.targets.resize(BT);
    s.lnf_mean.resize(R);
    s.lnf_rstd.resize(R);
    s.lnf.resize(BT * C);
    s.logits.resize(BT * Vl_);
    s.lse.resize(BT);
    s.losses.resize(BT);
  }
  s.allocated = true;
  return s;
}

void CpuBackend::set_params(const float* host) {
  std::memcpy(params_.data(), host, layout_.total() * sizeof(float));
}
void CpuBackend::get_params(float* host) const {
  finish_params();
  if (shard_master_ && full_params_) return full_params_(host);
  std::memcpy(host, params_.data(), layout_.total() * sizeof(float));
}
void CpuBackend::set_optimizer_state(const float* m, const float* v) {
  shard_.each([&](size_t lo, size_t hi, size_t at) {
    if (lo >= layout_.total()) return;
    hi = std::min(hi, layout_.total());
    std::memcpy(m_.data() + at, m + lo, (hi - lo) * sizeof(float));
    std::memcpy(v_.data() + at, v + lo, (hi - lo) * sizeof(float));
  });
}
void CpuBackend::get_optimizer_state(float* m, float* v) const {
  std::fill(m, m + layout_.total(), 0.0f);
  std::fill(v, v + layout_.total(), 0.0f);
  shard_.each([&](size_t lo, size_t hi, size_t at) {
    if (lo >= layout_.total()) return;
    hi = std::min(hi, layout_.total());
    std::memcpy(m + lo, m_.data() + at, (hi - lo) * sizeof(float));
    std::memcpy(v + lo, v_.data() + at, (hi - lo) * sizeof(float));
  });
}
void CpuBackend::get_grads(float* host) const {
  std::memcpy(host, grads_.data(), layout_.total() * sizeof(float));
}
void CpuBackend::zero_grad() { zero(grads_); }

// The layers of one micro-batch. Without tensor parallelism this is the one-GPU model; with it,
// Megatron's split: every rank runs the LayerNorms, dropout and residuals on its rows (all of them
// without sequence parallelism), the column-parallel qkv and fc1 on the gathered rows, attention on
// its heads, and the row-parallel proj and fc2 whose partial outputs are summed over TP.
float CpuBackend::forward(Slot& s, const int* inputs, const int* targets, const void* act_in,
                          void* act_out, bool training) {
  using namespace cpu;
  const int C = C_, BT = int(BT_), R = int(R_);
  const size_t RC = R_ * C_;
  const float* p = params_.data();
  const bool drop = training && dropout_ > 0;
  s.dropout_key = dropout_key_;
  auto dropout = [&](float* x, uint64_t site) {
    if (drop) dropout_rows(x, R_, dropout_site_key(s.dropout_key, site));
  };
  // Where the parameters up to layer i (-1: the embeddings) end (--overlap-param-gather).
  const int L = layout_.num_layers();
  auto upto = [&](int i) {
    return i + 1 < L ? layout_.layer(i + 1).ln1_w
                     : layout_.has_final_norm() ? layout_.lnf_w() : layout_.total();
  };
  params_needed(upto(-1));
  if (stage_.has_embedding) {
    std::copy(inputs, inputs + BT_, s.tokens.begin());
    embedding_forward(s, inputs, training);
  } else {
    std::memcpy(s.input.data(), act_in, RC * sizeof(float));
  }
  const float* residual = s.input.data();
  for (int i = 0; i < layout_.num_layers(); ++i) {
    const int gl = layout_.first_layer() + i;
    const LayerOffsets& o = layout_.layer(i);
    LayerActs& a = s.layers[i];
    params_needed(upto(i));
    layernorm_forward(a.ln1.data() + row0_ * C, a.ln1_mean.data(), a.ln1_rstd.data(), residual,
                      p + o.ln1_w, p + o.ln1_b, 1, R, C);
    gather_rows(a.ln1.data(), C);
    matmul_forward(a.qkv.data(), a.ln1.data(), p + o.qkv_w, p + o.qkv_b, 1, BT, C, 3 * Cl_);
    attention_fwd(a, gl, s.dropout_key, training);
    // attention projection output goes to res2 first, then the residual is added in place
    float* out = sp_ ? tmp_.data() : a.res2.data();
    matmul_forward(out, a.atty.data(), p + o.proj_w, tp_ == 1 ? p + o.proj_b : nullptr, 1, BT,
                   Cl_, C);
    reduce_rows(out, a.res2.data(), C);
    if (tp_ > 1) add_bias(a.res2.data(), p + o.proj_b, R_);
    dropout(a.res2.data(), 1 + 2 * gl);
    residual_forward(a.res2.data(), a.res2.data(), residual, int(RC));
    layernorm_forward(a.ln2.data() + row0_ * C, a.ln2_mean.data(), a.ln2_rstd.data(),
                      a.res2.data(), p + o.ln2_w, p + o.ln2_b, 1, R, C);
    gather_rows(a.ln2.data(), C);
    matmul_forward(a.fch.data(), a.ln2.data(), p + o.fc_w, p + o.fc_b, 1, BT, C, Fl_);
    gelu_forward(a.fch_gelu.data(), a.fch.data(), BT * Fl_);
    out = sp_ ? tmp_.data() : a.res3.data();
    matmul_forward(out, a.fch_gelu.data(), p + o.fc2_w, tp_ == 1 ? p + o.fc2_b : nullptr, 1, BT,
                   Fl_, C);
    reduce_rows(out, a.res3.data(), C);
    if (tp_ > 1) add_bias(a.res3.data(), p + o.fc2_b, R_);
    dropout(a.res3.data(), 2 + 2 * gl);
    residual_forward(a.res3.data(), a.res3.data(), a.res2.data(), int(RC));
    residual = a.res3.data();
  }
  params_needed(layout_.total());
  if (!stage_.has_head) {
    std::memcpy(act_out, residual, RC * sizeof(float));
    return 0.0f;
  }
  layernorm_forward(s.lnf.data() + row0_ * C, s.lnf_mean.data(), s.lnf_rstd.data(), residual,
                    p + layout_.lnf_w(), p + layout_.lnf_b(), 1, R, C);
  gather_rows(s.lnf.data(), C);
  // Tied output layer: logits = lnf · wteᵀ over this rank's rows of the padded vocabulary.
  matmul_forward(s.logits.data(), s.lnf.data(), p + layout_.wte(), nullptr, 1, BT, C, Vl_);
  std::copy(targets, targets + BT_, s.targets.begin());
  return cross_entropy_forward(s);
}

void CpuBackend::backward(Slot& s, const void* dact_out, void* dact_in, float loss_weight) {
  using namespace cpu;
  const int C = C_, BT = int(BT_), R = int(R_);
  const size_t RC = R_ * C_;
  const float* p = params_.data();
  float* g = grads_.data();
  // The gradient of a dropped-out branch: dres_ through the site's mask (dres_ itself without).
  auto branch = [&](uint64_t site) -> const float* {
    if (dropout_ <= 0) return dres_.data();
    dropout_rows_backward(dbranch_.data(), dres_.data(), R_, dropout_site_key(s.dropout_key, site));
    return dbranch_.data();
  };
  // The summed gradient of a column-parallel layer's input, on this rank's rows.
  float* dln = sp_ ? tmp_.data() : dln_.data();
  begin_sp_grads();
  if (stage_.has_head) {
    cross_entropy_backward(s, loss_weight);  // s.logits now holds dlogits
    zero(dln_);
    matmul_backward(dln_.data(), g + layout_.wte(), nullptr, s.logits.data(), s.lnf.data(),
                    p + layout_.wte(), 1, BT, C, Vl_);
    reduce_rows(dln_.data(), dln, C);
    zero(dres_);
    const float* last = layout_.num_layers() ? s.layers.back().res3.data() : s.input.data();
    layernorm_backward(dres_.data(), g + layout_.lnf_w(), g + layout_.lnf_b(), dln, last,
                       p + layout_.lnf_w(), s.lnf_mean.data(), s.lnf_rstd.data(), 1, R, C);
  } else {
    std::memcpy(dres_.data(), dact_out, RC * sizeof(float));
  }
  // dres_ carries the gradient of the residual stream down through the layers.
  for (int i = layout_.num_layers() - 1; i >= 0; --i) {
    const int gl = layout_.first_layer() + i;
    const LayerOffsets& o = layout_.layer(i);
    const LayerActs& a = s.layers[i];
    const float* residual = i == 0 ? s.input.data() : s.layers[i - 1].res3.data();
    const float* d = branch(2 + 2 * gl);
    if (tp_ > 1) bias_backward(g + o.fc2_b, d, R_);
    zero(dfch_gelu_);
    matmul_backward(dfch_gelu_.data(), g + o.fc2_w, tp_ == 1 ? g + o.fc2_b : nullptr,
                    full_rows(d), a.fch_gelu.data(), p + o.fc2_w, 1, BT, Fl_, C);
    zero(dfch_);
    gelu_backward(dfch_.data(), a.fch.data(), dfch_gelu_.data(), BT * Fl_);
    zero(dln_);
    matmul_backward(dln_.data(), g + o.fc_w, g + o.fc_b, dfch_.data(), a.ln2.data(), p + o.fc_w,
                    1, BT, C, Fl_);
    reduce_rows(dln_.data(), dln, C);
    layernorm_backward(dres_.data(), g + o.ln2_w, g + o.ln2_b, dln, a.res2.data(), p + o.ln2_w,
                       a.ln2_mean.data(), a.ln2_rstd.data(), 1, R, C);
    d = branch(1 + 2 * gl);
    if (tp_ > 1) bias_backward(g + o.proj_b, d, R_);
    zero(datty_);
    matmul_backward(datty_.data(), g + o.proj_w, tp_ == 1 ? g + o.proj_b : nullptr, full_rows(d),
                    a.atty.data(), p + o.proj_w, 1, BT, Cl_, C);
    zero(dqkv_);
    attention_bwd(a, gl, s.dropout_key);
    zero(dln_);
    matmul_backward(dln_.data(), g + o.qkv_w, g + o.qkv_b, dqkv_.data(), a.ln1.data(),
                    p + o.qkv_w, 1, BT, C, 3 * Cl_);
    reduce_rows(dln_.data(), dln, C);
    layernorm_backward(dres_.data(), g + o.ln1_w, g + o.ln1_b, dln, residual, p + o.ln1_w,
                       a.ln1_mean.data(), a.ln1_rstd.data(), 1, R, C);
    // --overlap-grad-reduce: this layer and those above are final (with sequence parallelism,
    // once end_sp_grads has summed the LayerNorm gradients: then only at the end).
    if (!sp_) grads_complete_from(o.ln1_w);
  }
  if (stage_.has_embedding)
    embedding_backward(s, branch(0));
  else
    std::memcpy(dact_in, dres_.data(), RC * sizeof(float));
  end_sp_grads();
  grads_complete_from(0);
}

float CpuBackend::stage_forward(int i, const int* inputs, const int* targets, const void* act_in,
                                void* act_out) {
  if (i < 0 || i >= pipeline_slots_)
    throw std::out_of_range("stage_forward: slot " + std::to_string(i) + " outside 0.." +
                            std::to_string(pipeline_slots_ - 1));
  Slot& s = slot(i);
  if (s.busy) throw std::logic_error("stage_forward: slot " + std::to_string(i) + " is in use");
  s.busy = true;
  return forward(s, inputs, targets, act_in, act_out, /*training=*/true);
}

void CpuBackend::stage_backward(int i, const void* dact_out, void* dact_in, float loss_weight) {
  if (i < 0 || i >= pipeline_slots_ || !slots_[i].busy)
    throw std::logic_error("stage_backward: slot " + std::to_string(i) + " holds no forward");
  backward(slots_[i], dact_out, dact_in, loss_weight);
  slots_[i].busy = false;
}

float CpuBackend::stage_forward_loss(const int* inputs, const int* targets, const void* act_in,
                                     void* act_out) {
  // Any slot not in flight (the extra last one when all are).
  int i = 0;
  while (i < pipeline_slots_ && slots_[i].busy) ++i;
  return forward(slot(i), inputs, targets, act_in, act_out, /*training=*/false);
}

size_t CpuBackend::stage_activation_elements() const { return R_ * C_; }

void* CpuBackend::stage_buffer(int which) {
  if (which < 0 || which >= stage_buffer_count())
    throw std::out_of_range("stage_buffer: " + std::to_string(which) + " outside 0.." +
                            std::to_string(stage_buffer_count() - 1));
  if (stage_buffers_.empty()) stage_buffers_.resize(stage_buffer_count());
  auto& b = stage_buffers_[which];
  if (b.empty()) b.assign(stage_activation_elements(), 0.0f);
  return b.data();
}

float CpuBackend::forward_loss(const int* inputs, const int* targets) {
  if (!stage_.whole_model(cfg_)) throw std::logic_error("forward_loss on a pipeline stage");
  return stage_forward_loss(inputs, targets, nullptr, nullptr);
}

float CpuBackend::forward_backward(const int* inputs, const int* targets, float loss_weight) {
  if (!stage_.whole_model(cfg_)) throw std::logic_error("forward_backward on a pipeline stage");
  const float loss = stage_forward(0, inputs, targets, nullptr, nullptr);
  stage_backward(0, nullptr, nullptr, loss_weight);
  return loss;
}

void CpuBackend::adamw_step(const AdamWConfig& c, float lr, int step, float grad_scale) {
  if (shard_.size() < layout_.total())
    throw std::logic_error("adamw_step with a sharded optimizer (use adamw_range)");
  for (const TensorInfo& t : layout_.tensors()) {
    cpu::adamw_update(params_.data() + t.offset, grads_.data() + t.offset, m_.data() + t.offset,
                      v_.data() + t.offset, t.numel, lr, c.beta1, c.beta2, c.eps,
                      t.decays() ? c.weight_decay : 0.0f, step, grad_scale);
  }
}

MemoryStats CpuBackend::memory() const {
  size_t floats = params_.size() * 2 + m_.size() * 2;  // params, grads, m, v
  for (const auto* v : {&dres_, &dln_, &dfch_gelu_, &dfch_, &datty_, &dqkv_, &dbranch_, &dfull_,
                        &tmp_})
    floats += v->size();
  for (const auto& b : stage_buffers_) floats += b.size();
  for (const Slot& s : slots_) {
    floats += (s.tokens.size() + s.targets.size()) * sizeof(int) / sizeof(float);
    for (const auto* v : {&s.input, &s.lnf_mean, &s.lnf_rstd, &s.lnf, &s.logits, &s.lse, &s.losses})
      floats += v->size();
    for (const auto& a : s.layers)
      for (const auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.atty, &a.att, &a.res2,
                            &a.ln2, &a.ln2_mean, &a.ln2_rstd, &a.fch, &a.fch_gelu, &a.res3})
        floats += v->size();
  }
  MemoryStats s;
  s.allocated_mb = s.max_allocated_mb = double(floats) * sizeof(float) / (1 << 20);
  return s;
}

std::unique_ptr<Backend> make_cpu_backend(const ModelConfig& config, const ParamLayout& layout,
                                          const BackendOptions& options) {
  return std::make_unique<CpuBackend>(config, layout, options);
}

}  // namespace gpt
