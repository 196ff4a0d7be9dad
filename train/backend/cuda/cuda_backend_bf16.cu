// The --bf16 path of the CUDA backend: activations and matmul gradients in bf16 end to end
// (see cuda_backend.h). Same model, same order of operations as layer_forward / backward;
// what changes is where values are rounded to bf16 and which passes are fused away.
#include <algorithm>

#include "kernels/dropout_mask.h"
#include "kernels/kernels.cuh"
#include "train/backend/cuda/cuda_backend.h"

namespace gpt {

void CudaBackend::branch_forward_bf16(float* out, const float* residual, const cuda::bf16* inp,
                                      size_t w, size_t b, int C, int OC, int site) {
  const int N = B_ * T_;
  if (training_ && dropout_ > 0) {
    // Dropout acts on the branch alone, before the residual add (one pass for both).
    cuda::matmul_forward_bf16(out, inp, params_h_ + w, params_ + b, 1, N, C, OC);
    cuda::dropout_residual_forward(out, out, residual, size_t(N) * OC, dropout_,
                                   dropout_site_key(dropout_key_, site));
  } else {
    cuda::matmul_forward_bf16_residual(out, residual, inp, params_h_ + w, params_ + b, N, C, OC);
  }
}

void CudaBackend::attention_forward_bf16(const LayerActs& a, int l) {
  const int B = B_, T = T_, C = cfg_.hidden_size, NH = cfg_.num_heads;
  const float p = training_ ? att_dropout_ : 0.0f;
  const uint64_t key = attention_dropout_key(dropout_key_, l);
  if (flash_) return cuda::flash_attention_forward(a.atty.h, a.lse, a.qkv_h, B, T, C, NH, p, key);
  // Head sizes the flash kernels do not take: the fp32 attention on fp32 copies.
  const size_t BTC = size_t(B) * T * C;
  cuda::Scratch<float> qkv(3 * BTC), out(BTC);
  cuda::to_fp32(qkv, a.qkv_h, 3 * BTC);
  cuda::attention_forward(out, a.att, qkv, B, T, C, NH, p, key);
  cuda::to_bf16(a.atty.h, out, BTC);
}

void CudaBackend::attention_backward_bf16(const LayerActs& a, int l, float* dbias) {
  const int B = B_, T = T_, C = cfg_.hidden_size, NH = cfg_.num_heads;
  const uint64_t key = attention_dropout_key(dropout_key_, l);
  if (flash_)
    return cuda::flash_attention_backward(dqkv_h_, datty_h_, a.qkv_h, a.atty.h, a.lse, B, T, C, NH,
                                          dbias, att_dropout_, key);
  const size_t BTC = size_t(B) * T * C;
  cuda::Scratch<float> qkv(3 * BTC), dout(BTC), dqkv(3 * BTC);
  cuda::to_fp32(qkv, a.qkv_h, 3 * BTC);
  cuda::to_fp32(dout, datty_h_, BTC);
  GPT_CUDA_CHECK(cudaMemsetAsync(dqkv, 0, 3 * BTC * sizeof(float), stream_));
  cuda::attention_backward(dqkv, dout, qkv, a.att, B, T, C, NH, att_dropout_, key);
  cuda::to_bf16(dqkv_h_, dqkv, 3 * BTC);
  cuda::bias_grad(dbias, dqkv_h_, B * T, 3 * C);
}

void CudaBackend::layernorm_forward_bf16(const Residual& in, cuda::bf16* out, float* mean,
                                         float* rstd, size_t w, size_t b) {
  const int B = B_, T = T_, C = cfg_.hidden_size;
  if (in.branch)
    cuda::layernorm_forward_residual_bf16(out, mean, rstd, in.sum, in.x, in.branch, params_ + w,
                                          params_ + b, B, T, C);
  else
    cuda::layernorm_forward_bf16(out, mean, rstd, in.x, params_ + w, params_ + b, B, T, C);
}

CudaBackend::Residual CudaBackend::layer_forward_bf16(int l, const Residual& in, bool recompute) {
  using namespace cuda;
  const int C = cfg_.hidden_size, F = cfg_.ffn_hidden_size, N = B_ * T_;
  const LayerOffsets& o = layout_.layer(l);
  const LayerActs& a = acts_[l];
  const bf16* ph = params_h_;
  layernorm_forward_bf16(in, a.ln1.h, a.ln1_mean, a.ln1_rstd, o.ln1_w, o.ln1_b);
  const float* residual = in.branch ? in.sum : in.x;
  matmul_forward_bf16_out(a.qkv_h, a.ln1.h, ph + o.qkv_w, ph + o.qkv_b, N, C, 3 * C);
  attention_forward_bf16(a, l);
  branch_forward_bf16(a.res2, residual, a.atty.h, o.proj_w, o.proj_b, C, C, 1 + 2 * l);
  layernorm_forward_bf16(Residual{a.res2}, a.ln2.h, a.ln2_mean, a.ln2_rstd, o.ln2_w, o.ln2_b);
  matmul_forward_bf16_gelu(a.fch_gelu.h, a.fch_h, a.ln2.h, ph + o.fc_w, ph + o.fc_b, N, C, F);
  if (recompute) return {a.res3};
  if (training_ && dropout_ > 0) {
    branch_forward_bf16(a.res3, a.res2, a.fch_gelu.h, o.fc2_w, o.fc2_b, F, C, 2 + 2 * l);
    return {a.res3};
  }
  // fc2 writes bf16 (as autocast has it); the next LayerNorm adds it to the fp32 stream: an
  // fp32 epilogue reading and writing the stream would slow the GEMM down.
  matmul_forward_bf16_out(fc2_out_h_, a.fch_gelu.h, ph + o.fc2_w, ph + o.fc2_b, N, F, C);
  return {a.res2, fc2_out_h_, a.res3};
}

void CudaBackend::classifier_bf16(bool backward, float loss_weight) {
  const int C = cfg_.hidden_size, V = cfg_.vocab_size, Vp = cfg_.padded_vocab_size;
  const int BT = B_ * T_;
  const cuda::bf16* wte = params_h_ + layout_.wte();
  for (int r0 = 0; r0 < BT; r0 += classifier_rows_) {
    const int rows = std::min(classifier_rows_, BT - r0);
    const cuda::bf16* lnf = lnf_.h + size_t(r0) * C;
    cuda::matmul_forward_bf16_out(logits_h_, lnf, wte, nullptr, rows, C, Vp);
    // In place: the logits become dlogits when backward.
    cuda::fused_classifier_bf16(backward ? logits_h_ : nullptr, losses_ + r0, logits_h_,
                                targets_ + r0, loss_weight, rows, V, Vp);
    if (!backward) continue;
    cuda::matmul_backward_bf16_dinp(nullptr, dln_h_ + size_t(r0) * C, logits_h_, wte, rows, C, Vp);
    // The first chunk writes the wte gradient when it is stale (zero_grad), the others add.
    cuda::matmul_backward_bf16_dweight(grads_ + layout_.wte(), logits_h_, lnf, rows, C, Vp,
                                       r0 > 0 || !weight_grads_stale_);
  }
}

CudaBackend::Grad CudaBackend::branch_grad_bf16(int site) {
  if (dropout_ <= 0) return {dres_, dres_h_};
  cuda::dropout_backward_bf16(dbranch_, dbranch_h_, dres_, size_t(B_) * T_ * cfg_.hidden_size,
                              dropout_, dropout_site_key(dropout_key_, site));
  return {dbranch_, dbranch_h_};
}

void CudaBackend::backward_bf16() {
  using namespace cuda;
  const int B = B_, T = T_, C = cfg_.hidden_size, F = cfg_.ffn_hidden_size, N = B * T;
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
  // classifier() has written dln_ and added the output layer's share of the wte gradient.
  GPT_CUDA_CHECK(cudaMemsetAsync(dres_, 0, size_t(N) * C * sizeof(float), stream_));
  const int L = cfg_.num_layers;
  const float* last = L ? acts_.back().res3 : encoded_;
  // Without dropout a branch's bias gradient is the column sum of the residual gradient that a
  // LayerNorm backward has just written: it is added there (fused), not in a pass of its own.
  const bool fused_bias = dropout_ <= 0;
  auto fc2_bias = [&](int l) { return fused_bias && l >= 0 ? g + layout_.layer(l).fc2_b : nullptr; };
  // The bias and LayerNorm gradients' column-sum finishes, queued and run in one launch per layer.
  ColumnSumBatch sums;
  // The output layer's input gradient: bf16 (dln_h_), or fp32 (dln_) when its logits are fp32.
  const auto lnf_backward = [&](const auto* dlnf) {
    layernorm_backward(dres_, g + layout_.lnf_w(), g + layout_.lnf_b(), dlnf, last,
                       p + layout_.lnf_w(), lnf_mean_, lnf_rstd_, B, T, C, dres_h_, fc2_bias(L - 1));
  };
  if (logits_h_)
    lnf_backward(dln_h_);
  else
    lnf_backward(dln_);
  // dres_ (and its bf16 copy dres_h_) carries the residual stream's gradient down the layers.
  for (int l = L - 1; l >= 0; --l) {
    const LayerOffsets& o = layout_.layer(l);
    const LayerActs& a = acts_[l];
    const float* residual = l == 0 ? encoded_ : acts_[l - 1].res3;
    // With recompute the shared slot holds the last layer run; the last layer is still there.
    if (recompute_ && l != L - 1) layer_forward_bf16(l, Residual{residual}, /*recompute=*/true);
    // MLP: fc2's input gradient with the GELU backward, which also recomputes the GELU output
    // (fc2's input, in the shared buffer) for fc2's weight gradient unless the layer kept it,
    // and adds the fc bias gradient (the column sums of the dfch it writes).
    const Grad d3 = branch_grad_bf16(2 + 2 * l);
    if (!fused_bias) bias_grad(g + o.fc2_b, d3.f, N, C);
    matmul_backward_bf16_dinp_gelu(dfch_h_, a.gelu_kept ? nullptr : a.fch_gelu.h, g + o.fc_b, d3.h,
                                   ph + o.fc2_w, a.fch_h, N, F, C);
    dweight(o.fc2_w, d3.h, a.fch_gelu.h, F, C);
    matmul_backward_bf16_dinp(nullptr, dln_h_, dfch_h_, ph + o.fc_w, N, C, F);
    dweight(o.fc_w, dfch_h_, a.ln2.h, C, F);
    layernorm_backward(dres_, g + o.ln2_w, g + o.ln2_b, dln_h_, a.res2, p + o.ln2_w, a.ln2_mean,
                       a.ln2_rstd, B, T, C, dres_h_, fused_bias ? g + o.proj_b : nullptr);
    // Attention.
    const Grad d2 = branch_grad_bf16(1 + 2 * l);
    if (!fused_bias) bias_grad(g + o.proj_b, d2.f, N, C);
    matmul_backward_bf16_dinp(nullptr, datty_h_, d2.h, ph + o.proj_w, N, C, C);
    dweight(o.proj_w, d2.h, a.atty.h, C, C);
    attention_backward_bf16(a, l, g + o.qkv_b);  // also adds the qkv bias gradient
    matmul_backward_bf16_dinp(nullptr, dln_h_, dqkv_h_, ph + o.qkv_w, N, C, 3 * C);
    dweight(o.qkv_w, dqkv_h_, a.ln1.h, C, 3 * C);
    layernorm_backward(dres_, g + o.ln1_w, g + o.ln1_b, dln_h_, residual, p + o.ln1_w, a.ln1_mean,
                       a.ln1_rstd, B, T, C, l > 0 ? dres_h_ : nullptr, fc2_bias(l - 1));
    sums.flush();
  }
  sums.flush();  // with no layers, the final LayerNorm's finishes (else already flushed)
  encoder_backward(g + layout_.wte(), g + layout_.wpe(), branch_grad(0), inputs_, B, T, C);
}

}  // namespace gpt
