// LayerNorm over the channel axis (ops.h: layernorm_forward / layernorm_backward), eps kLayerNormEps.
#pragma once

#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"

namespace gpt::cuda {

// out = (inp - mean) * rstd * weight + bias; mean, rstd [B,T] saved for backward.
// One warp per row; two passes over the row (mean, then variance) like the CPU reference.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int B, int T, int C);
// The --bf16 path: out rounded to bf16 (the matmul input), same statistics.
void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int B, int T, int C);
// The --bf16 LayerNorm of res_in + branch, where branch [B,T,C] is the bf16 output of the matmul
// below (its residual add runs here instead of in that matmul's epilogue): the fp32 sum is stored
// to res_out (the residual stream, kept for backward) and normalised as layernorm_forward_bf16
// normalises it, with the same bits as layernorm_forward_bf16 of res_out. With `drop`, the
// branch's hidden dropout comes first: res_out = res_in + drop(branch), the bits of
// dropout_residual_forward on the widened branch.
void layernorm_forward_residual_bf16(bf16* out, float* mean, float* rstd, float* res_out,
                                     const float* res_in, const bf16* branch, const float* weight,
                                     const float* bias, int B, int T, int C,
                                     const HiddenDropout& drop = {});
// dinp +=, dweight +=, dbias += (the parameter gradients by a deterministic column reduction).
// dinp_h, when given, receives the bf16 rounding of the updated dinp (the next matmul's dout);
// dinp_colsum, when given, gets the column sums of the updated dinp added (the bias gradient of
// the layer whose output gradient dinp is). With `drop` (that layer's hidden dropout), both are
// of drop(dinp), the gradient of the branch before its dropout; dinp stays the residual
// stream's.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C, bf16* dinp_h = nullptr,
                        float* dinp_colsum = nullptr, const HiddenDropout& drop = {});
// The same from a bf16 dout (the --bf16 path: the matmul input gradient in bf16, as autocast
// has it).
void layernorm_backward(float* dinp, float* dweight, float* dbias, const bf16* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C, bf16* dinp_h = nullptr,
                        float* dinp_colsum = nullptr, const HiddenDropout& drop = {});

}  // namespace gpt::cuda
