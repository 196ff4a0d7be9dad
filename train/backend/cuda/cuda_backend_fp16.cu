// The --fp16 path's flash attention (see cuda_backend.h): the layer keeps qkv in fp32 (its
// matmuls write fp32) and feeds the fp16 flash kernels with fp16 copies made per call; the
// output is written straight into the layer's fp16 atty (the proj matmul's input), and the qkv
// gradient comes back widened to fp32 for the qkv matmul's backward (and its bias sums).
#include "kernels/dropout_mask.h"
#include "kernels/kernels.cuh"
#include "train/backend/cuda/cuda_backend.h"

namespace gpt {

void CudaBackend::attention_forward_fp16(const LayerActs& a, int l) {
  // This rank's heads (tensor parallelism) and the layer's global index for the dropout key.
  const int B = B_, T = T_, C = Cl_, NH = NHl_;
  const size_t BTC = size_t(B) * T * C;
  cuda::Scratch<cuda::fp16> qkv(3 * BTC);
  cuda::to_fp16(qkv, a.qkv, 3 * BTC);
  cuda::flash_attention_forward(a.atty.hf, a.lse, qkv.get(), B, T, C, NH,
                                training_ ? att_dropout_ : 0.0f,
                                attention_key(l),
                                rank_heads());
}

void CudaBackend::attention_backward_fp16(const LayerActs& a, int l) {
  // This rank's heads (tensor parallelism) and the layer's global index for the dropout key.
  const int B = B_, T = T_, C = Cl_, NH = NHl_;
  const size_t BTC = size_t(B) * T * C;
  cuda::Scratch<cuda::fp16> qkv(3 * BTC), dout(BTC), dqkv(3 * BTC);
  cuda::to_fp16(qkv, a.qkv, 3 * BTC);
  cuda::to_fp16(dout, datty_, BTC);  // a loss-scaled gradient beyond 65504 becomes inf
  cuda::flash_attention_backward(dqkv.get(), dout.get(), qkv.get(), a.atty.hf, a.lse, B, T, C, NH,
                                 att_dropout_, attention_key(l),
                                 rank_heads());
  cuda::to_fp32(dqkv_, dqkv, 3 * BTC);
}

}  // namespace gpt
