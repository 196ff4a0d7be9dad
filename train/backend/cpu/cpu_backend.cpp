#include "train/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/dropout_mask.h"
#include "kernels/ops.h"

namespace gpt {
namespace {
void zero(std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); }
}  // namespace

CpuBackend::CpuBackend(const ModelConfig& config, const ParamLayout& layout,
                       const BackendOptions& options)
    : cfg_(config),
      layout_(layout),
      B_(options.micro_batch),
      T_(config.seq_length),
      dropout_(options.hidden_dropout),
      att_dropout_(options.attention_dropout) {
  const size_t n = layout_.total() + options.flat_padding;
  params_.assign(n, 0.0f);
  grads_.assign(n, 0.0f);
  shard_ = OptimizerShard(options.optimizer_shard, n);
  shard_master_ = options.shard_master && !options.optimizer_shard.empty();
  m_.assign(shard_.size(), 0.0f);
  v_.assign(shard_.size(), 0.0f);
  const size_t BT = size_t(B_) * T_, C = cfg_.hidden_size, F = cfg_.ffn_hidden_size;
  acts_.resize(cfg_.num_layers);
  for (auto& a : acts_) {
    a.ln1.resize(BT * C);
    a.ln1_mean.resize(BT);
    a.ln1_rstd.resize(BT);
    a.qkv.resize(BT * 3 * C);
    a.atty.resize(BT * C);
    a.att.resize(size_t(B_) * cfg_.num_heads * T_ * T_);
    a.res2.resize(BT * C);
    a.ln2.resize(BT * C);
    a.ln2_mean.resize(BT);
    a.ln2_rstd.resize(BT);
    a.fch.resize(BT * F);
    a.fch_gelu.resize(BT * F);
    a.res3.resize(BT * C);
  }
  encoded_.resize(BT * C);
  lnf_.resize(BT * C);
  lnf_mean_.resize(BT);
  lnf_rstd_.resize(BT);
  logits_.resize(BT * cfg_.padded_vocab_size);
  losses_.resize(BT);
  dres_.resize(BT * C);
  dln_.resize(BT * C);
  dfch_gelu_.resize(BT * F);
  dfch_.resize(BT * F);
  datty_.resize(BT * C);
  dqkv_.resize(BT * 3 * C);
  if (dropout_ > 0) dbranch_.resize(BT * C);
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

void CpuBackend::forward(const int* inputs, bool training) {
  using namespace cpu;
  const int B = B_, T = T_, C = cfg_.hidden_size, F = cfg_.ffn_hidden_size, NH = cfg_.num_heads;
  const int BTC = B * T * C;
  const float* p = params_.data();
  const bool drop = training && dropout_ > 0;
  auto dropout = [&](float* x, int site) {
    if (drop) dropout_forward(x, size_t(BTC), dropout_, dropout_site_key(dropout_key_, site));
  };
  // Where the parameters up to layer l (-1: the embeddings) end (--overlap-param-gather).
  const int L = cfg_.num_layers;
  auto upto = [&](int l) { return l + 1 < L ? layout_.layer(l + 1).ln1_w : layout_.lnf_w(); };
  params_needed(upto(-1));
  encoder_forward(encoded_.data(), inputs, p + layout_.wte(), p + layout_.wpe(), B, T, C);
  dropout(encoded_.data(), 0);
  const float* residual = encoded_.data();
  for (int l = 0; l < L; ++l) {
    const LayerOffsets& o = layout_.layer(l);
    LayerActs& a = acts_[l];
    params_needed(upto(l));
    layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), residual, p + o.ln1_w,
                      p + o.ln1_b, B, T, C);
    matmul_forward(a.qkv.data(), a.ln1.data(), p + o.qkv_w, p + o.qkv_b, B, T, C, 3 * C);
    attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), B, T, C, NH,
                      training ? att_dropout_ : 0.0f, attention_dropout_key(dropout_key_, l));
    // attention projection output goes to res2 first, then the residual is added in place
    matmul_forward(a.res2.data(), a.atty.data(), p + o.proj_w, p + o.proj_b, B, T, C, C);
    dropout(a.res2.data(), 1 + 2 * l);
    residual_forward(a.res2.data(), a.res2.data(), residual, BTC);
    layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res2.data(),
                      p + o.ln2_w, p + o.ln2_b, B, T, C);
    matmul_forward(a.fch.data(), a.ln2.data(), p + o.fc_w, p + o.fc_b, B, T, C, F);
    gelu_forward(a.fch_gelu.data(), a.fch.data(), B * T * F);
    matmul_forward(a.res3.data(), a.fch_gelu.data(), p + o.fc2_w, p + o.fc2_b, B, T, F, C);
    dropout(a.res3.data(), 2 + 2 * l);
    residual_forward(a.res3.data(), a.res3.data(), a.res2.data(), BTC);
    residual = a.res3.data();
  }
  params_needed(layout_.total());
  layernorm_forward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), residual, p + layout_.lnf_w(),
                    p + layout_.lnf_b(), B, T, C);
  // Tied output layer: logits = lnf · wteᵀ over the padded vocabulary.
  matmul_forward(logits_.data(), lnf_.data(), p + layout_.wte(), nullptr, B, T, C,
                 cfg_.padded_vocab_size);
}

float CpuBackend::forward_loss(const int* inputs, const int* targets) {
  forward(inputs, /*training=*/false);
  cpu::fused_classifier(nullptr, losses_.data(), logits_.data(), targets, 0.0f, B_, T_,
                        cfg_.vocab_size, cfg_.padded_vocab_size);
  double sum = 0;
  for (float l : losses_) sum += l;
  return float(sum / losses_.size());
}

float CpuBackend::forward_backward(const int* inputs, const int* targets, float loss_weight) {
  forward(inputs, /*training=*/true);
  cpu::fused_classifier(logits_.data(), losses_.data(), logits_.data(), targets, loss_weight, B_,
                        T_, cfg_.vocab_size, cfg_.padded_vocab_size);
  double sum = 0;
  for (float l : losses_) sum += l;
  backward(inputs, loss_weight);
  return float(sum / losses_.size());
}

void CpuBackend::backward(const int* inputs, float) {
  using namespace cpu;
  const int B = B_, T = T_, C = cfg_.hidden_size, F = cfg_.ffn_hidden_size, NH = cfg_.num_heads;
  const float* p = params_.data();
  float* g = grads_.data();
  const size_t BTC = size_t(B) * T * C;
  // The gradient of a dropped-out branch: dres_ through the site's mask (dres_ itself without).
  auto branch = [&](int site) -> const float* {
    if (dropout_ <= 0) return dres_.data();
    dropout_backward(dbranch_.data(), dres_.data(), BTC, dropout_,
                     dropout_site_key(dropout_key_, site));
    return dbranch_.data();
  };
  // logits_ now holds dlogits (fused_classifier works in place).
  zero(dln_);
  matmul_backward(dln_.data(), g + layout_.wte(), nullptr, logits_.data(), lnf_.data(),
                  p + layout_.wte(), B, T, C, cfg_.padded_vocab_size);
  zero(dres_);
  const float* last = cfg_.num_layers ? acts_.back().res3.data() : encoded_.data();
  layernorm_backward(dres_.data(), g + layout_.lnf_w(), g + layout_.lnf_b(), dln_.data(), last,
                     p + layout_.lnf_w(), lnf_mean_.data(), lnf_rstd_.data(), B, T, C);
  // dres_ carries the gradient of the residual stream down through the layers.
  for (int l = cfg_.num_layers - 1; l >= 0; --l) {
    const LayerOffsets& o = layout_.layer(l);
    const LayerActs& a = acts_[l];
    const float* residual = l == 0 ? encoded_.data() : acts_[l - 1].res3.data();
    zero(dfch_gelu_);
    matmul_backward(dfch_gelu_.data(), g + o.fc2_w, g + o.fc2_b, branch(2 + 2 * l), a.fch_gelu.data(),
                    p + o.fc2_w, B, T, F, C);
    zero(dfch_);
    gelu_backward(dfch_.data(), a.fch.data(), dfch_gelu_.data(), B * T * F);
    zero(dln_);
    matmul_backward(dln_.data(), g + o.fc_w, g + o.fc_b, dfch_.data(), a.ln2.data(), p + o.fc_w,
                    B, T, C, F);
    layernorm_backward(dres_.data(), g + o.ln2_w, g + o.ln2_b, dln_.data(), a.res2.data(),
                       p + o.ln2_w, a.ln2_mean.data(), a.ln2_rstd.data(), B, T, C);
    zero(datty_);
    matmul_backward(datty_.data(), g + o.proj_w, g + o.proj_b, branch(1 + 2 * l), a.atty.data(),
                    p + o.proj_w, B, T, C, C);
    zero(dqkv_);
    attention_backward(dqkv_.data(), datty_.data(), a.qkv.data(), a.att.data(), B, T, C, NH,
                       att_dropout_, attention_dropout_key(dropout_key_, l));
    zero(dln_);
    matmul_backward(dln_.data(), g + o.qkv_w, g + o.qkv_b, dqkv_.data(), a.ln1.data(),
                    p + o.qkv_w, B, T, C, 3 * C);
    layernorm_backward(dres_.data(), g + o.ln1_w, g + o.ln1_b, dln_.data(), residual, p + o.ln1_w,
                       a.ln1_mean.data(), a.ln1_rstd.data(), B, T, C);
    grads_complete_from(o.ln1_w);  // --overlap-grad-reduce: this layer and those above are final
  }
  encoder_backward(g + layout_.wte(), g + layout_.wpe(), branch(0), inputs, B, T, C);
  grads_complete_from(0);
}

double CpuBackend::grad_norm() { return std::sqrt(cpu::sum_squares(grads_.data(), grads_.size())); }

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
  for (const auto* v : {&encoded_, &lnf_, &lnf_mean_, &lnf_rstd_, &logits_, &losses_, &dres_, &dln_,
                        &dfch_gelu_, &dfch_, &datty_, &dqkv_, &dbranch_})
    floats += v->size();
  for (const auto& a : acts_)
    for (const auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.atty, &a.att, &a.res2, &a.ln2,
                          &a.ln2_mean, &a.ln2_rstd, &a.fch, &a.fch_gelu, &a.res3})
      floats += v->size();
  MemoryStats s;
  s.allocated_mb = s.max_allocated_mb = double(floats) * sizeof(float) / (1 << 20);
  return s;
}

std::unique_ptr<Backend> make_cpu_backend(const ModelConfig& config, const ParamLayout& layout,
                                          const BackendOptions& options) {
  return std::make_unique<CpuBackend>(config, layout, options);
}

}  // namespace gpt
