// Deterministic column reductions: dst_k[c] += sum over rows r of f_k(r, c), for K quantities at
// once (bias gradients, LayerNorm weight/bias gradients). Device-only header (include from .cu).
//
// Two passes, both in an order fixed by the shape alone:
//   1. blocks of 32 columns × kRowsPerChunk rows; each of the 8 thread rows walks its rows in
//      order, then thread row 0 adds the 8 partials in order -> partial[chunk][k][c];
//   2. one thread per column adds the chunk partials in chunk order and does dst += sum.
// Threads of a warp read 32 consecutive columns of one row (coalesced).
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

inline constexpr int kColSumRowsPerChunk = 256;  // fewer partials for the serial final pass
inline constexpr int kColSumThreadRows = 8;

template <int K, class F>
__global__ void column_sum_partial_kernel(float* partial, F f, int N, int C) {
  __shared__ float sh[kColSumThreadRows][K][32];
  const int c = blockIdx.x * 32 + threadIdx.x;
  const int r0 = blockIdx.y * kColSumRowsPerChunk;
  const int r1 = min(N, r0 + kColSumRowsPerChunk);
  float acc[K];
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  if (c < C) {
    for (int r = r0 + threadIdx.y; r < r1; r += kColSumThreadRows) {
      float v[K];
      f(r, c, v);
#pragma unroll
      for (int k = 0; k < K; ++k) acc[k] += v[k];
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) sh[threadIdx.y][k][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float s = 0.0f;
      for (int y = 0; y < kColSumThreadRows; ++y) s += sh[y][k][threadIdx.x];
      partial[(size_t(blockIdx.y) * K + k) * C + c] = s;
    }
  }
}

template <int K>
struct ColumnTargets {
  float* dst[K];
};

template <int K>
__global__ void column_sum_final_kernel(ColumnTargets<K> out, const float* partial, int chunks,
                                        int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float s = 0.0f;
    for (int j = 0; j < chunks; ++j) s += partial[(size_t(j) * K + k) * C + c];
    if (out.dst[k]) out.dst[k][c] += s;
  }
}

// The same sum for many chunks: block (32, 8) per 32 columns; thread row y adds chunks
// y, y + 8, ... in order, then thread row 0 adds the 8 results in order.
template <int K>
__global__ void column_sum_final_wide_kernel(ColumnTargets<K> out, const float* partial, int chunks,
                                             int C) {
  __shared__ float sh[kColSumThreadRows][K][32];
  const int c = blockIdx.x * 32 + threadIdx.x;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float s = 0.0f;
    if (c < C)
      for (int j = threadIdx.y; j < chunks; j += kColSumThreadRows)
        s += partial[(size_t(j) * K + k) * C + c];
    sh[threadIdx.y][k][threadIdx.x] = s;
  }
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float s = 0.0f;
    for (int y = 0; y < kColSumThreadRows; ++y) s += sh[y][k][threadIdx.x];
    if (out.dst[k]) out.dst[k][c] += s;
  }
}

// f is a device functor: f(int r, int c, float v[K]) fills the K values of element (r, c).
// dst[k] may be nullptr (that quantity is skipped on write).
template <int K, class F>
void column_sum_add(ColumnTargets<K> dst, F f, int N, int C) {
  if (N <= 0 || C <= 0) return;
  const int chunks = int(ceil_div(N, kColSumRowsPerChunk));
  Scratch<float> partial(size_t(chunks) * K * C);
  dim3 grid(ceil_div(C, 32), chunks), block(32, kColSumThreadRows);
  column_sum_partial_kernel<K><<<grid, block, 0, stream()>>>(partial.get(), f, N, C);
  GPT_CUDA_CHECK_LAUNCH();
  column_sum_final_kernel<K><<<ceil_div(C, 256), 256, 0, stream()>>>(dst, partial.get(), chunks, C);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
