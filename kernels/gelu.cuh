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

}  // namespace gpt::cuda
