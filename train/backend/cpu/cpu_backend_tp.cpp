// The CPU backend's tensor-parallel pieces (Megatron's split; cpu_backend.cpp composes them):
// collectives over BackendOptions::tp_comm around the TP regions, the vocabulary-parallel
// embedding and cross-entropy, attention over this rank's heads, sequence-parallel row shards.
// Every dropout mask is the one-GPU model's: the same micro-batch drops the same elements at any
// tensor-parallel size, with or without sequence parallelism.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/dropout_mask.h"
#include "kernels/ops.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/parallel.h"

namespace gpt {
namespace {

using dist::DType;

}  // namespace

void CpuBackend::gather_rows(float* x, size_t width) {
  if (!sp_) return;
  tp_comm_->all_gather(x + row0_ * width, x, R_ * width, DType::kF32);
}

const float* CpuBackend::full_rows(const float* d) {
  if (!sp_) return d;
  std::memcpy(dfull_.data() + row0_ * C_, d, R_ * C_ * sizeof(float));
  gather_rows(dfull_.data(), C_);
  return dfull_.data();
}

void CpuBackend::reduce_rows(float* full, float* out, size_t width) {
  if (tp_ == 1) return;
  if (sp_)
    tp_comm_->reduce_scatter_sum(full, out, R_ * width, DType::kF32);
  else
    tp_comm_->all_reduce_sum(full, BT_ * width, DType::kF32);
}

void CpuBackend::add_bias(float* x, const float* bias, size_t rows) {
  const size_t C = C_;
  cpu::parallel_for(rows, [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r)
      for (size_t c = 0; c < C; ++c) x[r * C + c] += bias[c];
  }, 64);
}

void CpuBackend::bias_backward(float* dbias, const float* dout, size_t rows) {
  const size_t C = C_;
  // Each thread owns channels; rows are summed in order, as matmul_backward's bias.
  cpu::parallel_for(C, [&](size_t lo, size_t hi) {
    for (size_t c = lo; c < hi; ++c) {
      float db = 0.0f;
      for (size_t r = 0; r < rows; ++r) db += dout[r * C + c];
      dbias[c] += db;
    }
  }, 16);
}

void CpuBackend::dropout_rows(float* x, size_t rows, uint64_t site_key) {
  cpu::dropout_forward(x, rows * C_, dropout_, site_key, row0_ * C_);
}

void CpuBackend::dropout_rows_backward(float* dx, const float* d, size_t rows, uint64_t site_key) {
  cpu::dropout_backward(dx, d, rows * C_, dropout_, site_key, row0_ * C_);
}

void CpuBackend::embedding_forward(Slot& s, const int* inputs, bool training) {
  const float* p = params_.data();
  const size_t C = C_, T = T_;
  if (tp_ == 1) {
    cpu::encoder_forward(s.input.data(), inputs, p + layout_.wte(), p + layout_.wpe(), B_, T_, C_);
  } else {
    // Rows of this rank's vocabulary, zeros elsewhere; summed over TP (reduce-scattered with
    // sequence parallelism), then the position embedding of this rank's rows.
    float* full = sp_ ? tmp_.data() : s.input.data();
    const int v0 = layout_.vocab_begin(), Vl = Vl_;
    const float* wte = p + layout_.wte();
    cpu::parallel_for(BT_, [&](size_t lo, size_t hi) {
      for (size_t bt = lo; bt < hi; ++bt) {
        const int v = inputs[bt] - v0;
        float* o = full + bt * C;
        if (v >= 0 && v < Vl)
          std::memcpy(o, wte + size_t(v) * C, C * sizeof(float));
        else
          std::fill(o, o + C, 0.0f);
      }
    }, 16);
    reduce_rows(full, s.input.data(), C);
    const float* wpe = p + layout_.wpe();
    cpu::parallel_for(R_, [&](size_t lo, size_t hi) {
      for (size_t r = lo; r < hi; ++r) {
        const float* pe = wpe + ((row0_ + r) % T) * C;
        float* o = s.input.data() + r * C;
        for (size_t c = 0; c < C; ++c) o[c] += pe[c];
      }
    }, 16);
  }
  if (training && dropout_ > 0)
    dropout_rows(s.input.data(), R_, dropout_site_key(s.dropout_key, 0));
}

void CpuBackend::embedding_backward(Slot& s, const float* d) {
  float* g = grads_.data();
  const size_t C = C_, T = T_;
  if (tp_ == 1) {
    cpu::encoder_backward(g + layout_.wte(), g + layout_.wpe(), d, s.tokens.data(), B_, T_, C_);
    return;
  }
  // Position embedding from this rank's rows (with sequence parallelism a part, summed over TP
  // by end_sp_grads); threads own channel slices and add rows in order.
  float* dwpe = g + layout_.wpe();
  cpu::parallel_for(C, [&](size_t c0, size_t c1) {
    for (size_t r = 0; r < R_; ++r) {
      float* pe = dwpe + ((row0_ + r) % T) * C;
      for (size_t c = c0; c < c1; ++c) pe[c] += d[r * C + c];
    }
  }, 16);
  const float* dfull = full_rows(d);
  float* dwte = g + layout_.wte();
  const int v0 = layout_.vocab_begin(), Vl = Vl_;
  cpu::parallel_for(C, [&](size_t c0, size_t c1) {
    for (size_t bt = 0; bt < BT_; ++bt) {
      const int v = s.tokens[bt] - v0;
      if (v < 0 || v >= Vl) continue;
      float* te = dwte + size_t(v) * C;
      for (size_t c = c0; c < c1; ++c) te[c] += dfull[bt * C + c];
    }
  }, 16);
}

void CpuBackend::attention_fwd(LayerActs& a, int global_layer, uint64_t key, bool training) {
  const float p = training ? att_dropout_ : 0.0f;
  cpu::attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), B_, T_, Cl_, NHl_, p,
                         attention_dropout_key(key, global_layer), rank_heads());
}

void CpuBackend::attention_bwd(const LayerActs& a, int global_layer, uint64_t key) {
  cpu::attention_backward(dqkv_.data(), datty_.data(), a.qkv.data(), a.att.data(), B_, T_, Cl_,
                          NHl_, att_dropout_, attention_dropout_key(key, global_layer),
                          rank_heads());
}

// This rank's heads of the model's, so that attention dropout drops what a one-GPU run drops.
HeadRange CpuBackend::rank_heads() const {
  return HeadRange::of_rank(cfg_.num_heads, tp_, tp_rank_);
}

// Softmax cross-entropy over the real vocabulary, each rank holding the logits of its vocabulary
// rows: the row maximum, the sum of exponentials and the target's logit are reduced over TP, the
// logits never gathered. At tp = 1 the same arithmetic as cpu::fused_classifier.
float CpuBackend::cross_entropy_forward(Slot& s) {
  const int real = std::clamp(cfg_.vocab_size - layout_.vocab_begin(), 0, Vl_);
  const int v0 = layout_.vocab_begin(), Vl = Vl_;
  const size_t BT = BT_;
  std::vector<float> maxv(BT * tp_);
  std::vector<double> sums(2 * BT);  // sum of exponentials, then the target logit
  cpu::parallel_for(BT, [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      const float* x = s.logits.data() + r * Vl;
      float m = -INFINITY;
      for (int i = 0; i < real; ++i) m = x[i] > m ? x[i] : m;
      maxv[size_t(tp_rank_) * BT + r] = m;
    }
  });
  if (tp_ > 1) {
    tp_comm_->all_gather(maxv.data() + size_t(tp_rank_) * BT, maxv.data(), BT, DType::kF32);
    for (size_t r = 0; r < BT; ++r)
      for (int k = 0; k < tp_; ++k) maxv[r] = std::max(maxv[r], maxv[size_t(k) * BT + r]);
  }
  cpu::parallel_for(BT, [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      const float* x = s.logits.data() + r * Vl;
      double sum = 0.0;
      for (int i = 0; i < real; ++i) sum += std::exp(double(x[i] - maxv[r]));
      sums[r] = sum;
      const int t = s.targets[r] - v0;
      sums[BT + r] = t >= 0 && t < Vl ? double(x[t]) : 0.0;
    }
  });
  if (tp_ > 1) tp_comm_->all_reduce_sum(sums.data(), 2 * BT, DType::kF64);
  double total = 0.0;
  for (size_t r = 0; r < BT; ++r) {
    s.lse[r] = maxv[r] + float(std::log(sums[r]));
    s.losses[r] = s.lse[r] - float(sums[BT + r]);
    total += s.losses[r];
  }
  return float(total / double(BT));
}

void CpuBackend::cross_entropy_backward(Slot& s, float dloss) {
  const int real = std::clamp(cfg_.vocab_size - layout_.vocab_begin(), 0, Vl_);
  const int v0 = layout_.vocab_begin(), Vl = Vl_;
  cpu::parallel_for(BT_, [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      float* x = s.logits.data() + r * Vl;  // becomes dlogits in place
      const int t = s.targets[r] - v0;
      const float lse = s.lse[r];
      for (int i = 0; i < real; ++i) {
        const float p = std::exp(x[i] - lse);
        x[i] = dloss * (p - (i == t ? 1.0f : 0.0f));
      }
      for (int i = real; i < Vl; ++i) x[i] = 0.0f;
    }
  });
}

void CpuBackend::begin_sp_grads() {
  if (!sp_) return;
  sp_saved_.clear();
  for (const TensorInfo& t : layout_.tensors()) {
    if (!layout_.grad_needs_tp_reduce(t)) continue;
    float* g = grads_.data() + t.offset;
    sp_saved_.insert(sp_saved_.end(), g, g + t.numel);
    std::fill(g, g + t.numel, 0.0f);
  }
}

void CpuBackend::end_sp_grads() {
  if (!sp_) return;
  std::vector<float> part;
  part.reserve(sp_saved_.size());
  for (const TensorInfo& t : layout_.tensors())
    if (layout_.grad_needs_tp_reduce(t))
      part.insert(part.end(), grads_.data() + t.offset, grads_.data() + t.offset + t.numel);
  tp_comm_->all_reduce_sum(part.data(), part.size(), DType::kF32);
  size_t at = 0;
  for (const TensorInfo& t : layout_.tensors()) {
    if (!layout_.grad_needs_tp_reduce(t)) continue;
    float* g = grads_.data() + t.offset;
    for (size_t i = 0; i < t.numel; ++i, ++at) g[i] = sp_saved_[at] + part[at];
  }
}

double CpuBackend::grad_norm() {
  if (tp_ == 1 && stage_.has_embedding)
    return std::sqrt(cpu::sum_squares(grads_.data(), grads_.size()));
  // Shards from every rank, replicated tensors from rank 0 only.
  double sum = 0.0;
  for (const TensorInfo& t : layout_.tensors())
    if (layout_.counts_in_norm(t)) sum += cpu::sum_squares(grads_.data() + t.offset, t.numel);
  return std::sqrt(tp_ > 1 ? dist::host_all_reduce_sum(*tp_comm_, sum) : sum);
}

}  // namespace gpt
