// Linear layer y = x·Wᵀ + b with W [OC, C] (ops.h: matmul_forward / matmul_backward), on cuBLAS.
//
// fp32 path: fp32 inputs, fp32 arithmetic (TF32 only after set_tf32(true)).
// bf16 path (--bf16): bf16 activations and weights feed the tensor cores, accumulation and every
// output (out, dinp, dweight, dbias) stay fp32. The caller keeps fp32 master weights and refreshes
// a bf16 copy after each optimizer step (convert.cuh: to_bf16), and stores the matmul inputs it
// saves for backward in bf16 (layernorm / attention / GELU outputs converted with to_bf16).
// Bias gradients are a deterministic column reduction of the fp32 dout in both paths.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// out[b,t,o] = bias[o] + sum_c inp[b,t,c] * weight[o,c]; bias may be nullptr.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int B,
                    int T, int C, int OC);
// dinp [B,T,C] +=, dweight [OC,C] +=, dbias [OC] += (dinp and dbias may be nullptr).
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC);

// bf16 operands, fp32 out (written, bias added in fp32).
void matmul_forward_bf16(float* out, const bf16* inp, const bf16* weight, const float* bias, int B,
                         int T, int C, int OC);
// dout arrives in fp32 (the gradient stream stays fp32); it is rounded to bf16 for the two GEMMs
// in a stream-ordered scratch buffer, and dbias is summed from the fp32 values.
// accumulate_dinp = false writes dinp instead of adding to it (its old contents are ignored,
// NaN included), which spares the caller a memset of a fresh gradient buffer.
void matmul_backward_bf16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const bf16* inp, const bf16* weight, int B, int T, int C, int OC,
                          bool accumulate_dinp = true);

// --fp16 path: the same with fp16 operands (no cuBLASLt bias epilogue). The backward converts
// dout to fp16, where a loss-scaled gradient beyond 65504 becomes inf (the overflow the loss
// scaler detects through the gradient norm).
void matmul_forward_fp16(float* out, const fp16* inp, const fp16* weight, const float* bias, int B,
                         int T, int C, int OC);
void matmul_backward_fp16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const fp16* inp, const fp16* weight, int B, int T, int C, int OC,
                          bool accumulate_dinp = true);
// The forward's bias is added in the cuBLASLt epilogue (CUBLASLT_EPILOGUE_BIAS) when cuBLASLt
// offers an algorithm for the shape, else by a separate kernel.

}  // namespace gpt::cuda
