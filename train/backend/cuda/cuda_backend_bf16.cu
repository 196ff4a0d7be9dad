// The --bf16 path of the CUDA backend: activations and matmul gradients in bf16 end to end
// (see cuda_backend.h). Same model, same order of operations as layer_forward / backward;
// what changes is where values are rounded to bf16 and which passes are fused away.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "kernels/dropout_mask.h"
#include "kernels/kernels.cuh"
#include "train/backend/cuda/cuda_backend.h"

namespace gpt {

void CudaBackend::branch_forward_bf16(float* out, const float* residual, const cuda::bf16* inp,
                                      size_t w, size_t b, int C, int OC, int site) {
  const int N = B_ * T_;
  const bool drop = training_ && dropout_ > 0;
  // Dropout acts on the branch alone, before the residual add (one pass for both).
  const auto drop_residual = [&](size_t n) {
    cuda::dropout_residual_forward(out, out, residual, n, dropout_,
                                   site_key(site), row0_ * OC);
  };
  if (tp_ > 1) {
    // Tensor parallelism (a row-parallel product): each rank's partial product in bf16, the bias
    // from TP rank 0 only, summed over the group in bf16 (with sequence parallelism this rank's
    // rows of the sum), widened; then the dropout and the fp32 residual on the sum.
    cuda::Scratch<cuda::bf16> part(size_t(N) * OC);
    cuda::matmul_forward_bf16_out(part, inp, params_h_ + w, tp_rank_ == 0 ? params_h_ + b : nullptr,
                                  N, C, OC);
    const size_t n = size_t(rows_) * OC;
    cuda::to_fp32(out, sum_rows(part.get()), n);
    if (drop)
      drop_residual(n);
    else
      cuda::residual_forward(out, out, residual, int(n));
    return;
  }
  if (drop) {
    cuda::matmul_forward_bf16(out, inp, params_h_ + w, params_ + b, 1, N, C, OC);
    drop_residual(size_t(N) * OC);
  } else {
    cuda::matmul_forward_bf16_residual(out, residual, inp, params_h_ + w, params_ + b, N, C, OC);
  }
}

void CudaBackend::attention_forward_bf16(const LayerActs& a, int l) {
  const int B = B_, T = T_, C = Cl_, NH = NHl_;  // this rank's heads
  const float p = training_ ? att_dropout_ : 0.0f;
  const DropKey key = attention_key(l);
  if (flash_)
    return cuda::flash_attention_forward(a.atty.h, a.lse, a.qkv_h, B, T, C, NH, p, key,
                                         rank_heads());
  // Head sizes the flash kernels do not take: the fp32 attention on fp32 copies.
  const size_t BTC = size_t(B) * T * C;
  cuda::Scratch<float> qkv(3 * BTC), out(BTC);
  cuda::to_fp32(qkv, a.qkv_h, 3 * BTC);
  cuda::attention_forward(out, a.att, qkv, B, T, C, NH, p, key, rank_heads());
  cuda::to_bf16(a.atty.h, out, BTC);
}

void CudaBackend::attention_backward_bf16(const LayerActs& a, int l, float* dbias) {
  const int B = B_, T = T_, C = Cl_, NH = NHl_;  // this rank's heads
  const DropKey key = attention_key(l);
  if (flash_)
    return cuda::flash_attention_backward(dqkv_h_, datty_h_, a.qkv_h, a.atty.h, a.lse, B, T, C, NH,
                                          dbias, att_dropout_, key, rank_heads());
  const size_t BTC = size_t(B) * T * C;
  cuda::Scratch<float> qkv(3 * BTC), dout(BTC), dqkv(3 * BTC);
  cuda::to_fp32(qkv, a.qkv_h, 3 * BTC);
  cuda::to_fp32(dout, datty_h_, BTC);
  GPT_CUDA_CHECK(cudaMemsetAsync(dqkv, 0, 3 * BTC * sizeof(float), stream_));
  cuda::attention_backward(dqkv, dout, qkv, a.att, B, T, C, NH, att_dropout_, key, rank_heads());
  cuda::to_bf16(dqkv_h_, dqkv, 3 * BTC);
  cuda::bias_grad(dbias, dqkv_h_, B * T, 3 * C);
}

void CudaBackend::layernorm_forward_bf16(const Residual& in, cuda::bf16* out, float* mean,
                                         float* rstd, size_t w, size_t b) {
  const int B = B_, T = T_, C = cfg_.hidden_size;
  if (sp_) {
    // This rank's rows (never a pending branch under tensor parallelism), then all of them.
    if (in.branch) throw std::logic_error("sequence parallel LayerNorm with a pending branch");
    cuda::layernorm_forward_bf16(out + row0_ * C, mean, rstd, in.x, params_ + w, params_ + b, 1,
                                 rows_, C);
    return gather_rows(out);
  }
  if (in.branch)
    cuda::layernorm_forward_residual_bf16(
        out, mean, rstd, in.sum, in.x, in.branch, params_ + w, params_ + b, B, T, C,
        training_ ? HiddenDropout::at(dropout_, site_key(in.site))
                  : HiddenDropout{});
  else
    cuda::layernorm_forward_bf16(out, mean, rstd, in.x, params_ + w, params_ + b, B, T, C);
}

CudaBackend::Residual CudaBackend::layer_forward_bf16(int l, const Residual& in, bool recompute) {
  using namespace cuda;
  // This rank's FFN columns and attention width (all of them without tensor parallelism).
  const int C = cfg_.hidden_size, F = Fl_, Ca = Cl_, N = B_ * T_, gl = global_layer(l);
  const LayerOffsets& o = layout_.layer(l);
  const LayerActs& a = acts_[l];
  const bf16* ph = params_h_;
  layernorm_forward_bf16(in, a.ln1.h, a.ln1_mean, a.ln1_rstd, o.ln1_w, o.ln1_b);
  const float* residual = in.branch ? in.sum : in.x;
  matmul_forward_bf16_out(a.qkv_h, a.ln1.h, ph + o.qkv_w, ph + o.qkv_b, N, C, 3 * Ca);
  attention_forward_bf16(a, l);
  Residual mid{a.res2};
  if (training_ && dropout_ > 0 && tp_ == 1) {
    // With dropout the projection's output also waits in bf16 for the LayerNorm, which drops it
    // and adds the residual in its one pass over the rows.
    matmul_forward_bf16_out(fc2_out_h_, a.atty.h, ph + o.proj_w, ph + o.proj_b, N, Ca, C);
    mid = {residual, fc2_out_h_, a.res2, 1 + 2 * gl};
  } else {
    branch_forward_bf16(a.res2, residual, a.atty.h, o.proj_w, o.proj_b, Ca, C, 1 + 2 * gl);
  }
  layernorm_forward_bf16(mid, a.ln2.h, a.ln2_mean, a.ln2_rstd, o.ln2_w, o.ln2_b);
  matmul_forward_bf16_gelu(a.fch_gelu.h, a.fch_h, a.ln2.h, ph + o.fc_w, ph + o.fc_b, N, C, F);
  if (recompute) return {a.res3};
  // The sum stored here: under tensor parallelism (fc2's partial products are summed first), and
  // at the end of a pipeline stage that hands res3 on.
  const bool stage_end = l == layout_.num_layers() - 1 && !layout_.has_final_norm();
  if (tp_ > 1 || stage_end) {
    branch_forward_bf16(a.res3, a.res2, a.fch_gelu.h, o.fc2_w, o.fc2_b, F, C, 2 + 2 * gl);
    return {a.res3};
  }
  // fc2 writes bf16 (as autocast has it); the next LayerNorm adds it to the fp32 stream (after
  // its dropout): an fp32 epilogue reading and writing the stream would slow the GEMM down.
  matmul_forward_bf16_out(fc2_out_h_, a.fch_gelu.h, ph + o.fc2_w, ph + o.fc2_b, N, F, C);
  return {a.res2, fc2_out_h_, a.res3, 2 + 2 * gl};
}

void CudaBackend::classifier_bf16(bool backward, float loss_weight) {
  const int C = cfg_.hidden_size, Vp = Vl_;  // this rank's vocabulary rows (all without TP)
  const int BT = B_ * T_;
  const cuda::bf16* wte = params_h_ + layout_.wte();
  for (int r0 = 0; r0 < BT; r0 += classifier_rows_) {
    const int rows = std::min(classifier_rows_, BT - r0);
    const cuda::bf16* lnf = lnf_.h + size_t(r0) * C;
    cuda::matmul_forward_bf16_out(logits_h_, lnf, wte, nullptr, rows, C, Vp);
    // In place: the logits become dlogits when backward.
    cross_entropy(logits_h_, r0, rows, backward, loss_weight);
    if (!backward) continue;
    // Under tensor parallelism the input gradient is a partial sum, summed in bf16 below.
    cuda::matmul_backward_bf16_dinp(nullptr, dln_h_ + size_t(r0) * C, logits_h_, wte, rows, C, Vp);
    // The first chunk writes the wte gradient when it is stale (zero_grad), the others add.
    cuda::matmul_backward_bf16_dweight(grads_ + layout_.wte(), logits_h_, lnf, rows, C, Vp,
                                       r0 > 0 || !weight_grads_stale_);
  }
  if (backward && tp_ > 1) sum_rows(dln_h_);  // sequence parallel: this rank's rows of the sum
}

CudaBackend::Grad CudaBackend::branch_grad_bf16(int site, bool ln_dropped) {
  if (dropout_ <= 0 || ln_dropped) return {dres_, dres_h_};
  cuda::dropout_backward_bf16(dbranch_, dbranch_h_, dres_, size_t(rows_) * cfg_.hidden_size,
                              dropout_, site_key(site),
                              row0_ * cfg_.hidden_size);
  return {dbranch_, dbranch_h_};
}

void CudaBackend::backward_bf16() {
  using namespace cuda;
  const int B = B_, T = T_, C = cfg_.hidden_size, F = Fl_, Ca = Cl_, N = B * T;
  // The LayerNorms' rows (and dres_'s): with sequence parallelism this rank's R of the B·T.
  const int LB = sp_ ? 1 : B, LT = sp_ ? rows_ : T, R = rows_;
  // The LayerNorms' input gradients in bf16, summed over the TP group: this rank's rows.
  const bf16* dln_h_rows = dln_h_ + row0_ * C;
  const float* p = params_;
  const bf16* ph = params_h_;
  float* g = grads_;
  const bool add = !weight_grads_stale_;  // the weight gradients: added, or written (zero_grad)
  // A layer weight's gradient (at offset w): written in bf16 when packed, else in fp32 (added).
  const auto dweight = [&](size_t w, const bf16* dout, const bf16* inp, int C, int OC) {
    if (!add && packs(w))
      matmul_backward_bf16_dweight(reinterpret_cast<bf16*>(g + w), dout, inp, N, C, OC);
    else
      matmul_backward_bf16_dweight(g + w, dout, inp, N, C, OC, add);
  };
  const int L = layout_.num_layers();
  const float* last = L ? acts_.back().res3 : encoded_;
  // A branch's output gradient is the residual gradient a LayerNorm backward has just written
  // (with dropout, dropped by the branch's mask), and its bias gradient that gradient's column
  // sums: that LayerNorm writes the bf16 copy (dropped) and adds the sums (fused), not a pass of
  // their own; with dropout under tensor parallelism, passes of their own do.
  const bool ln_drops = dropout_ > 0 && tp_ == 1;
  const bool fused_bias = dropout_ <= 0 || ln_drops;
  auto fc2_bias = [&](int l) { return fused_bias && l >= 0 ? g + layout_.layer(l).fc2_b : nullptr; };
  const auto site_drop = [&](int site) {
    return ln_drops ? HiddenDropout::at(dropout_, site_key(site))
                    : HiddenDropout{};
  };
  // The bias and LayerNorm gradients' column-sum finishes, queued and run in one launch per layer.
  ColumnSumBatch sums;
  // The output layer's input gradient (this rank's rows): bf16 (dln_h_), or fp32 (dln_) when its
  // logits are fp32.
  const auto lnf_backward = [&](const auto* dlnf) {
    layernorm_backward(dres_, g + layout_.lnf_w(), g + layout_.lnf_b(), dlnf, last,
                       p + layout_.lnf_w(), lnf_mean_, lnf_rstd_, LB, LT, C, dres_h_,
                       fc2_bias(L - 1),
                       L > 0 ? site_drop(2 + 2 * global_layer(L - 1)) : HiddenDropout{});
  };
  // classifier() has written dln_ and added the output layer's share of the wte gradient; a
  // stage before the last starts from the gradient of its output instead (its last fc2's
  // output gradient, dropped and summed in the loop below).
  if (!layout_.has_final_norm()) {
    load_stage_grad();
  } else {
    GPT_CUDA_CHECK(cudaMemsetAsync(dres_, 0, size_t(R) * C * sizeof(float), stream_));
    if (bf16_logits_)
      lnf_backward(dln_h_rows);
    else
      lnf_backward(dln_ + row0_ * C);
  }
  // Under tensor parallelism the column-parallel products' input gradients are partial sums,
  // summed over the group in bf16 where they are (dln_h_).
  const auto input_grad = [&](const bf16* dout, size_t w, int OC) {
    matmul_backward_bf16_dinp(nullptr, dln_h_, dout, ph + w, N, C, OC);
    if (tp_ > 1) sum_rows(dln_h_);
  };
  const auto ln_backward = [&](size_t w, size_t b, const float* inp, const float* mean,
                               const float* rstd, bf16* dinp_h, float* colsum,
                               const HiddenDropout& drop) {
    layernorm_backward(dres_, g + w, g + b, dln_h_rows, inp, p + w, mean, rstd, LB, LT, C, dinp_h,
                       colsum, drop);
  };
  // A row-parallel product's output gradient in bf16: with sequence parallelism this rank's rows
  // gathered into `full` (made only then: the one-GPU step allocates nothing more).
  const auto whole = [&](const bf16* rows, std::optional<Scratch<bf16>>& full) -> const bf16* {
    if (!sp_) return rows;
    full.emplace(size_t(N) * C);
    GPT_CUDA_CHECK(cudaMemcpyAsync(full->get() + row0_ * C, rows, size_t(R) * C * sizeof(bf16),
                                   cudaMemcpyDeviceToDevice, stream_));
    gather_rows(full->get());
    return full->get();
  };
  // dres_ (and its bf16 copy dres_h_) carries the residual stream's gradient down the layers.
  for (int l = L - 1; l >= 0; --l) {
    const LayerOffsets& o = layout_.layer(l);
    const LayerActs& a = acts_[l];
    const float* residual = l == 0 ? encoded_ : acts_[l - 1].res3;
    const int gl = global_layer(l);
    // With recompute the shared slot holds the last layer run; the last layer is still there
    // (not on a pipeline stage: other micro-batches ran in between).
    if (recompute_ && (l != L - 1 || staged_))
      layer_forward_bf16(l, Residual{residual}, /*recompute=*/true);
    // MLP: fc2's input gradient with the GELU backward, which also recomputes the GELU output
    // (fc2's input, in the shared buffer) for fc2's weight gradient unless the layer kept it,
    // and adds the fc bias gradient (the column sums of the dfch it writes).
    // by_ln: fc2's output gradient came from the LayerNorm above (the next layer's or the final
    // one); the top layer of a stage before the last has it from the next stage, and drops and
    // sums it here.
    const bool by_ln = l != L - 1 || layout_.has_final_norm();
    const Grad d3 = branch_grad_bf16(2 + 2 * gl, ln_drops && by_ln);
    if (!fused_bias || !by_ln) bias_grad(g + o.fc2_b, d3.f, R, C);
    std::optional<Scratch<bf16>> d3_full;
    const bf16* d3h = whole(d3.h, d3_full);
    matmul_backward_bf16_dinp_gelu(dfch_h_, a.gelu_kept ? nullptr : a.fch_gelu.h, g + o.fc_b, d3h,
                                   ph + o.fc2_w, a.fch_h, N, F, C);
    dweight(o.fc2_w, d3h, a.fch_gelu.h, F, C);
    input_grad(dfch_h_, o.fc_w, F);
    dweight(o.fc_w, dfch_h_, a.ln2.h, C, F);
    ln_backward(o.ln2_w, o.ln2_b, a.res2, a.ln2_mean, a.ln2_rstd, dres_h_,
                fused_bias ? g + o.proj_b : nullptr, site_drop(1 + 2 * gl));
    // Attention.
    const Grad d2 = branch_grad_bf16(1 + 2 * gl, ln_drops);
    if (!fused_bias) bias_grad(g + o.proj_b, d2.f, R, C);
    std::optional<Scratch<bf16>> d2_full;
    const bf16* d2h = whole(d2.h, d2_full);
    matmul_backward_bf16_dinp(nullptr, datty_h_, d2h, ph + o.proj_w, N, Ca, C);
    dweight(o.proj_w, d2h, a.atty.h, Ca, C);
    attention_backward_bf16(a, l, g + o.qkv_b);  // also adds the qkv bias gradient
    input_grad(dqkv_h_, o.qkv_w, 3 * Ca);
    dweight(o.qkv_w, dqkv_h_, a.ln1.h, C, 3 * Ca);
    ln_backward(o.ln1_w, o.ln1_b, residual, a.ln1_mean, a.ln1_rstd, l > 0 ? dres_h_ : nullptr,
                fc2_bias(l - 1), l > 0 ? site_drop(2 * gl) : HiddenDropout{});
    sums.flush();
    // --overlap-grad-reduce: this layer and those above are final (sequence parallel: later).
    if (!sp_) grads_complete_from(o.ln1_w);
  }
  sums.flush();  // with no layers, the final LayerNorm's finishes (else already flushed)
  if (layout_.has_wpe())
    embedding_backward(branch_grad(0));
  else
    store_stage_grad();
  if (!sp_) grads_complete_from(0);  // sequence parallel: after sp_reduce_grads (the caller)
}

}  // namespace gpt
