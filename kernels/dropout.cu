#include "kernels/dropout.cuh"
#include "kernels/dropout_mask.h"

namespace gpt::cuda {
namespace {

// Each thread takes one group of four elements, the four lanes of one mask word (the hash is
// most of these passes' work); op(i, v) gets element i's dropped value v of in[i].
template <class Op>
__device__ __forceinline__ void for_groups(const float* in, size_t n, const HiddenDropout& d,
                                           Op op) {
  for (size_t i0 = 4 * (size_t(blockIdx.x) * blockDim.x + threadIdx.x); i0 < n;
       i0 += 4 * size_t(gridDim.x) * blockDim.x) {
    const uint64_t word = dropout_word(d.key, i0);
    for (int k = 0; k < 4 && i0 + k < n; ++k)
      op(i0 + k, lane_keep(word, k, d.threshold) ? in[i0 + k] * d.scale : 0.0f);
  }
}

__global__ void dropout_kernel(float* out, const float* in, size_t n, const HiddenDropout d) {
  for_groups(in, n, d, [&](size_t i, float v) { out[i] = v; });
}

__global__ void dropout_residual_kernel(float* out, const float* x, const float* residual, size_t n,
                                        const HiddenDropout d) {
  for_groups(x, n, d, [&](size_t i, float v) { out[i] = v + residual[i]; });
}

__global__ void dropout_bf16_kernel(float* out, bf16* out_h, const float* in, size_t n,
                                    const HiddenDropout d) {
  for_groups(in, n, d, [&](size_t i, float v) {
    out[i] = v;
    out_h[i] = __float2bfloat16_rn(v);
  });
}

unsigned grid_for(size_t n) {
  const size_t blocks = (n + 1023) / 1024;  // 256 threads of four elements
  return unsigned(blocks < 65536 ? blocks : 65536);  // grid-stride beyond that
}

}  // namespace

void dropout_backward(float* dinp, const float* dout, size_t n, float p, uint64_t key) {
  if (n == 0) return;
  dropout_kernel<<<grid_for(n), 256, 0, stream()>>>(dinp, dout, n, HiddenDropout::at(p, key));
  GPT_CUDA_CHECK_LAUNCH();
}

void dropout_forward(float* x, size_t n, float p, uint64_t key) {
  dropout_backward(x, x, n, p, key);
}

void dropout_residual_forward(float* out, const float* x, const float* residual, size_t n, float p,
                              uint64_t key) {
  if (n == 0) return;
  dropout_residual_kernel<<<grid_for(n), 256, 0, stream()>>>(out, x, residual, n,
                                                             HiddenDropout::at(p, key));
  GPT_CUDA_CHECK_LAUNCH();
}

void dropout_backward_bf16(float* dinp, bf16* dinp_h, const float* dout, size_t n, float p,
                           uint64_t key) {
  if (n == 0) return;
  dropout_bf16_kernel<<<grid_for(n), 256, 0, stream()>>>(dinp, dinp_h, dout, n,
                                                         HiddenDropout::at(p, key));
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
