// Linear layer y = x·Wᵀ + b with W [OC, C] (ops.h: matmul_forward / matmul_backward), on cuBLAS.
//
// fp32 path: fp32 inputs, fp32 arithmetic (no TF32).
// Half paths: bf16 (or fp16) activations and weights feed the tensor cores with fp32 accumulation.
// matmul_{forward,backward}_bf16 keep fp32 outputs and an fp32 dout (the fp16 path and the
// classifier when the padded vocabulary is not a multiple of 8 use them); the *_bf16_out /
// _residual / _dinp / _dweight functions below are the backend's --bf16 path, with bf16 outputs
// and a bf16 dout as autocast has them. The caller keeps fp32 master weights and a bf16 copy.
// Bias gradients are deterministic column reductions (bias_grad, or fused by the caller).
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

// --bf16 activations end to end (the backend's bf16 path). N rows, bf16 operands, fp32
// accumulation; bias, residual and the cuBLASLt epilogue as in the forward above.
// out [N,OC] bf16 = inp·Wᵀ + bias (bias bf16, may be nullptr).
void matmul_forward_bf16_out(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias,
                             int N, int C, int OC);
// out [N,OC] bf16 = GELU(pre), pre [N,OC] bf16 = inp·Wᵀ + bias (the MLP's first layer): the GELU
// in the cuBLASLt epilogue (GELU_AUX_BIAS, applied to the fp32 sum before rounding), which
// spares a pass over pre; without a cuBLASLt algorithm, the matmul then gelu_forward_bf16.
void matmul_forward_bf16_gelu(bf16* out, bf16* pre, const bf16* inp, const bf16* weight,
                              const bf16* bias, int N, int C, int OC);
// out [N,OC] fp32 = residual + inp·Wᵀ + bias (the residual add fused as beta = 1).
void matmul_forward_bf16_residual(float* out, const float* residual, const bf16* inp,
                                  const bf16* weight, const float* bias, int N, int C, int OC);
// The backward from a bf16 dout [N,OC], in two calls (the backend runs work between them):
// dinp [N,C] = dout·W, written in fp32 (dinp) or else in bf16 (dinp_h);
// dweight [OC,C] += doutᵀ·inp (fp32), or = with accumulate false (the old contents ignored,
// NaN included: the first micro-batch of a step writes instead of adding to zeros). The bias
// gradient is bias_grad's job.
void matmul_backward_bf16_dinp(float* dinp, bf16* dinp_h, const bf16* dout, const bf16* weight,
                               int N, int C, int OC);
void matmul_backward_bf16_dweight(float* dweight, const bf16* dout, const bf16* inp, int N, int C,
                                  int OC, bool accumulate = true);
// dweight [OC,C] = bf16(doutᵀ·inp), written (the fp32 sum rounded once, as autocast's weight
// gradients are): the backend's weight gradients of a step with one micro-batch.
void matmul_backward_bf16_dweight(bf16* dweight, const bf16* dout, const bf16* inp, int N, int C,
                                  int OC);
// The MLP's fc2 input gradient and the GELU backward in one: with dH = bf16(dout·W) [N,C],
// dinp_h = bf16(gelu'(pre)·dH), act = bf16(gelu(pre)) (fc2's input again, for its weight
// gradient; nullptr when the layer kept the forward's) and dbias [C] += the column sums of dinp_h
// (fc's bias gradient; may be nullptr).
// Fused in the Hopper GEMM's epilogue where it applies (tanh.approx), else
// matmul_backward_bf16_dinp then gelu_backward_bf16_bias through a scratch dH.
void matmul_backward_bf16_dinp_gelu(bf16* dinp_h, bf16* act, float* dbias, const bf16* dout,
                                    const bf16* weight, const bf16* pre, int N, int C, int OC);
// dbias [OC] += column sums of dout [N,OC] (deterministic; fp32 accumulation).
void bias_grad(float* dbias, const float* dout, int N, int OC);
void bias_grad(float* dbias, const bf16* dout, int N, int OC);

// The forward's bias is added in the cuBLASLt epilogue (CUBLASLT_EPILOGUE_BIAS) when cuBLASLt
// offers an algorithm for the shape, else by a separate kernel.

}  // namespace gpt::cuda
