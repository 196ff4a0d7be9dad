#include "kernels/dropout.cuh"
#include "kernels/dropout_mask.h"

namespace gpt::cuda {
namespace {

// Each thread takes one group of four mask elements, the four lanes of one mask word (the hash
// is most of these passes' work); element i of in is mask element first + i, so the groups start
// at first rounded down to a multiple of four. op(i, v) gets element i's dropped value v of in[i].
template <class Op>
__device__ __forceinline__ void for_groups(const float* in, size_t n, uint64_t first,
                                           const HiddenDropout& site, Op op) {
  const HiddenDropout d = site.resolved();
  const uint64_t g0 = first & ~uint64_t(3), end = first + n;
  for (uint64_t m0 = g0 + 4 * (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x); m0 < end;
       m0 += 4 * uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t word = dropout_word(d.key.value, m0);
    for (int k = 0; k < 4; ++k) {
      const uint64_t m = m0 + k;
      if (m < first || m >= end) continue;
      const size_t i = m - first;
      op(i, lane_keep(word, k, d.threshold) ? in[i] * d.scale : 0.0f);
    }
  }
}

__global__ void dropout_kernel(float* out, const float* in, size_t n, uint64_t first,
                               const HiddenDropout d) {
  for_groups(in, n, first, d, [&](size_t i, float v) { out[i] = v; });
}

__global__ void dropout_residual_kernel(float* out, const float* x, const float* residual, size_t n,
                                        uint64_t first, const HiddenDropout d) {
  for_groups(x, n, first, d, [&](size_t i, float v) { out[i] = v + residual[i]; });
}

__global__ void dropout_bf16_kernel(float* out, bf16* out_h, const float* in, size_t n,
                                    uint64_t first, const HiddenDropout d) {
  for_groups(in, n, first, d, [&](size_t i, float v) {
    out[i] = v;
    out_h[i] = __float2bfloat16_rn(v);
  });
}

__global__ void store_key_kernel(uint64_t* slot, uint64_t key) { *slot = key; }

// n elements from mask element first: groups of four from first rounded down, 256 threads of
// four elements a block.
unsigned grid_for(size_t n, uint64_t first) { return grid_stride_blocks(first % 4 + n, 1024); }

}  // namespace

void dropout_backward(float* dinp, const float* dout, size_t n, float p, DropKey key,
                      uint64_t first) {
  if (n == 0) return;
  dropout_kernel<<<grid_for(n, first), 256, 0, stream()>>>(dinp, dout, n, first,
                                                           HiddenDropout::at(p, key));
  GPT_CUDA_CHECK_LAUNCH();
}

void dropout_forward(float* x, size_t n, float p, DropKey key, uint64_t first) {
  dropout_backward(x, x, n, p, key, first);
}

void dropout_residual_forward(float* out, const float* x, const float* residual, size_t n, float p,
                              DropKey key, uint64_t first) {
  if (n == 0) return;
  dropout_residual_kernel<<<grid_for(n, first), 256, 0, stream()>>>(out, x, residual, n, first,
                                                                    HiddenDropout::at(p, key));
  GPT_CUDA_CHECK_LAUNCH();
}

void dropout_backward_bf16(float* dinp, bf16* dinp_h, const float* dout, size_t n, float p,
                           DropKey key, uint64_t first) {
  if (n == 0) return;
  dropout_bf16_kernel<<<grid_for(n, first), 256, 0, stream()>>>(dinp, dinp_h, dout, n, first,
                                                                HiddenDropout::at(p, key));
  GPT_CUDA_CHECK_LAUNCH();
}

void store_dropout_key(uint64_t* slot, uint64_t key) {
  store_key_kernel<<<1, 1, 0, stream()>>>(slot, key);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
