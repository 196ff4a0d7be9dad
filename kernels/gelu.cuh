// GELU, tanh approximation (ops.h: gelu_forward / gelu_backward), N elements.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

void gelu_forward(float* out, const float* inp, int N);
// dinp[i] += gelu'(inp[i]) * dout[i]
void gelu_backward(float* dinp, const float* inp, const float* dout, int N);

// --bf16 path: out = bf16(gelu(inp)) in one pass (the same bits as gelu_forward then to_bf16).
void gelu_forward_bf16(bf16* out, const float* inp, int N);
// --fp16 path: out = fp16(gelu(inp)).
void gelu_forward_fp16(fp16* out, const float* inp, int N);
// dinp[i] = gelu'(inp[i]) * dout[i] (written, not added: the same bits as gelu_backward into
// zeros, without the memset).
void gelu_backward_set(float* dinp, const float* inp, const float* dout, int N);

// --bf16 activations end to end: bf16 in and out (fp32 arithmetic, one rounding).
void gelu_forward_bf16(bf16* out, const bf16* inp, size_t N);
// dinp = bf16(gelu'(inp) · dout), written; recomputed (unless nullptr) = bf16(gelu(inp)), the
// same bits as gelu_forward_bf16 (the backend recomputes the fc2 input instead of keeping it).
void gelu_backward_bf16(bf16* dinp, bf16* recomputed, const bf16* inp, const bf16* dout, size_t N);
// The same over N rows of F columns, also adding the column sums of the written (bf16-rounded)
// dinp into dbias [F] (fp32, +=): the fc bias gradient in the pass that writes dfch, the same
// values as bias_grad(dbias, dinp, N, F) up to summation order. Deterministic: per-block
// partials over 64-row chunks, then a fixed-order sum over the chunks (column_sum.cuh).
// dinp must not alias the inputs. dbias == nullptr: the plain backward.
void gelu_backward_bf16_bias(bf16* dinp, bf16* recomputed, const bf16* inp, const bf16* dout,
                             int N, int F, float* dbias);

}  // namespace gpt::cuda
