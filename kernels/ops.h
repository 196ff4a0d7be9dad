// The operations of a GPT-2 / Megatron GPT training step, as plain functions (llm.c style).
//
// This header is the contract between the CPU reference (train/backend/cpu/, namespace gpt::cpu,
// declared here) and the CUDA kernels (kernels/*.cu, expected in namespace gpt::cuda with the same
// parameter lists, pointers being device pointers, work queued on the current stream). The CUDA
// versions are tested against these CPU functions.
//
// Conventions, shared by every function below:
//   - fp32, row-major, contiguous. B = batch (micro-batch), T = sequence length, C = hidden size,
//     NH = attention heads (C % NH == 0, head size hs = C / NH), OC = output channels of a matmul,
//     V = real vocabulary size, Vp = padded vocabulary size (Vp >= V, Megatron pads to 128·TP).
//   - Token ids are int32 in [0, V).
//   - Every *_backward ADDS (+=) into all of its gradient outputs, parameter and activation
//     gradients alike (gradient accumulation over micro-batches and the residual stream both rely
//     on it). The caller zeroes gradient buffers when it wants a fresh sum.
//     The one exception is fused_classifier, which WRITES (=) its outputs (it may work in place).
//   - Results are deterministic: the same inputs give bit-identical outputs whatever the thread
//     count (CPU: every output element is summed by one thread in a fixed order).
//   - Weight layout is PyTorch nn.Linear / llm.c: weight[OC, C]; y = x · weightᵀ + bias.
//     (HF GPT-2 Conv1D stores [C, OC]; the HF exporter transposes.)
//   - The fused QKV layout is [q | k | v] along the last axis (each C wide), and head h of q, k or v
//     occupies columns [h·hs, (h+1)·hs) of its part (llm.c / HF GPT-2 layout).
//
// Change log (signatures are frozen; any change is noted here):
//   v1 — first version.
//   v2 — dropout_forward / dropout_backward (hidden dropout); dropout_backward WRITES (=).
//   v3 — attention_forward / attention_backward take the attention dropout probability and key
//        (defaults 0: no dropout, the v1 results bit for bit).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/clip_scale.h"
#include "kernels/dropout_mask.h"

namespace gpt {

inline constexpr float kLayerNormEps = 1e-5f;  // Megatron --layernorm-epsilon default

namespace cpu {

// ---- embedding ----------------------------------------------------------------------------
// out[b,t,:] = wte[inp[b,t], :] + wpe[t, :]
//   out [B,T,C]  inp [B,T]  wte [Vp,C]  wpe [maxT,C] (maxT >= T)
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C);
// dwte[inp[b,t], :] += dout[b,t,:];  dwpe[t, :] += sum_b dout[b,t,:]
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C);

// ---- layer norm ---------------------------------------------------------------------------
// out = (inp - mean) * rstd * weight + bias over the last axis; eps = kLayerNormEps.
//   out, inp [B,T,C]  weight, bias [C]  mean, rstd [B,T] (saved for backward)
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int B, int T, int C);
// dinp [B,T,C] +=, dweight [C] +=, dbias [C] +=
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C);

// ---- linear layer -------------------------------------------------------------------------
// out[b,t,o] = bias[o] + sum_c inp[b,t,c] * weight[o,c]
//   out [B,T,OC]  inp [B,T,C]  weight [OC,C]  bias [OC] or nullptr (no bias)
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int B,
                    int T, int C, int OC);
// dinp [B,T,C] +=, dweight [OC,C] +=, dbias [OC] += (dbias may be nullptr; so may dinp, for the
// first layer of a graph whose input needs no gradient)
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC);

// ---- GELU (tanh approximation, as GPT-2 / Megatron openai_gelu) ---------------------------
// out[i] = 0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x³))),  N elements
void gelu_forward(float* out, const float* inp, int N);
// dinp[i] += gelu'(inp[i]) * dout[i]
void gelu_backward(float* dinp, const float* inp, const float* dout, int N);

// ---- causal multi-head self-attention (core only; the QKV and output projections are matmuls) --
//   qkv [B,T,3C] ([q|k|v], see conventions)  out [B,T,C]  att [B,NH,T,T] softmax probabilities
//   (saved for backward; entries above the diagonal are written as 0). Scale 1/sqrt(hs).
// Attention dropout (Megatron's attention_dropout on attention_probs, before the product with v):
// with 0 < dropout < 1, out = (att ∘ Z) · v with Z = keep / (1 - dropout), keep(b,h,i,j) =
// attention_keep(key, b·NH + h, i, j, dropout_threshold(dropout)) (dropout_mask.h; key from
// attention_dropout_key; T ≤ 65536): one 64-bit word per group of four elements (i, j), (i, j+8),
// (i+8, j), (i+8, j+8), each element kept when its 16-bit lane is at least the threshold, so the
// drop probability is dropout rounded to a multiple of 1/65536 (the scale stays 1/(1 - dropout)).
// att stays the undropped probabilities; the backward regenerates the mask from the same key.
// heads: which of the model's heads the NH are (tensor parallelism): the mask hashes
// heads.model_bh(b·NH + h, NH) in place of b·NH + h.
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       float dropout = 0.0f, uint64_t key = 0, HeadRange heads = {});
// dqkv [B,T,3C] += gradient w.r.t. q, k and v (dropout, key and heads as the forward's).
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, float dropout = 0.0f, uint64_t key = 0,
                        HeadRange heads = {});

// ---- fused classifier: softmax cross-entropy and its gradient ----------------------------
// For each row (b,t): losses[b,t] = logsumexp(logits[b,t,0:V]) - logits[b,t,targets[b,t]].
// If dlogits is not nullptr, WRITES dlogits[b,t,i] = dloss · (softmax_i - [i == target]) for i < V
// and 0 for the padded columns V <= i < Vp. dlogits may equal logits (in place, like llm.c).
// dloss is the gradient of the total loss w.r.t. each token's loss (e.g. 1 / (B·T·grad_accum)).
// Padded vocabulary columns never enter the softmax.
//   logits, dlogits [B,T,Vp]  losses [B,T]  targets [B,T]
void fused_classifier(float* dlogits, float* losses, const float* logits, const int* targets,
                      float dloss, int B, int T, int V, int Vp);

// ---- residual -----------------------------------------------------------------------------
// out[i] = a[i] + b[i]
void residual_forward(float* out, const float* a, const float* b, int N);
// da[i] += dout[i]; db[i] += dout[i]
void residual_backward(float* da, float* db, const float* dout, int N);

// ---- hidden dropout (Megatron's bias-dropout-add: dropout on a branch before the residual add) ---
// x[i] = keep(i) ? x[i] / (1 - p) : 0, in place, with keep(i) = dropout_keep(key, first + i,
// dropout_threshold(p)) from kernels/dropout_mask.h (the same mask on every backend; `first`: a
// shard's offset in the whole tensor). 0 <= p < 1.
void dropout_forward(float* x, size_t n, float p, uint64_t key, uint64_t first = 0);
// dinp[i] = keep(i) ? dout[i] / (1 - p) : 0 (WRITES; dinp may equal dout)
void dropout_backward(float* dinp, const float* dout, size_t n, float p, uint64_t key,
                      uint64_t first = 0);

// ---- optimizer ----------------------------------------------------------------------------
// AdamW (decoupled weight decay, PyTorch / Megatron semantics) on n elements:
//   g = grad · grad_scale            (grad_scale folds in clipping and loss-scale removal)
//   m = beta1·m + (1-beta1)·g;  v = beta2·v + (1-beta2)·g²
//   p -= lr · ( (m / (1-beta1^step)) / (sqrt(v / (1-beta2^step)) + eps) + weight_decay · p )
// step is 1-based. Call once per tensor group (weight_decay 0 for biases and norms).
void adamw_update(float* params, const float* grads, float* m, float* v, size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale);

// ---- gradient norm ------------------------------------------------------------------------
// Sum of squares of x[0:n] in double, deterministic (fixed 64K-element chunks summed in order).
// Global norm = sqrt(sum over all gradient buffers); clipping = clip_scale() fed to adamw_update.
double sum_squares(const float* x, size_t n);
// x[i] *= s (used where a scale must be applied outside the optimizer, e.g. tests, fp16 unscale)
void scale_inplace(float* x, size_t n, float s);

}  // namespace cpu
}  // namespace gpt
