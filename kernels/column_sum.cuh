// Deterministic column reductions: dst_k[c] += sum over rows r of f_k(r, c), for K quantities at
// once (bias gradients, LayerNorm weight/bias gradients). Device-only header (include from .cu);
// column_sum.cu holds ColumnSumBatch.
//
// Two passes, both in an order fixed by the shape alone:
//   1. blocks of 32 columns × kRowsPerChunk rows; each of the 8 thread rows walks its rows in
//      order, then thread row 0 adds the 8 partials in order -> partial[chunk][k][c];
//   2. one thread per column adds the chunk partials in chunk order and does dst += sum.
// Threads of a warp read 32 consecutive columns of one row (coalesced).
#pragma once

#include <utility>

#include "kernels/column_sum_batch.cuh"
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

// The same sum for many chunks: one block of (32, kFinishRows) threads per 32 columns and
// quantity k (grid.y); thread row y adds chunks y, y + kFinishRows, ... in order, then thread
// row 0 adds the kFinishRows results in order. Launched by column_sum_finish (or, batched, by
// ColumnSumBatch::flush: the same order, so the same bits).
inline constexpr int kFinishRows = 32;

// Columns 32·column_block .. + 31 of quantity k: dst[c] += sum over chunks of partial[j][k][c].
// All threads of the (32, kFinishRows) block call it.
__device__ inline void column_finish_block(float* dst, const float* partial, int chunks, int K,
                                           int C, int k, int column_block) {
  __shared__ float sh[kFinishRows][33];
  const int c = column_block * 32 + threadIdx.x;
  float s = 0.0f;
  if (c < C)
    for (int j = threadIdx.y; j < chunks; j += kFinishRows) s += partial[(size_t(j) * K + k) * C + c];
  sh[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  float t = 0.0f;
  for (int y = 0; y < kFinishRows; ++y) t += sh[y][threadIdx.x];
  if (dst) dst[c] += t;
}

template <int K>
__global__ void column_sum_final_wide_kernel(ColumnTargets<K> out, const float* partial, int chunks,
                                             int C) {
  const int k = blockIdx.y;
  float* dst = nullptr;
#pragma unroll
  for (int q = 0; q < K; ++q)
    if (q == k) dst = out.dst[q];  // constant indices: the parameter array stays out of local memory
  column_finish_block(dst, partial, chunks, K, C, k, blockIdx.x);
}

// Queues dst[k] += partial's column sums (K quantities of C columns over `chunks` chunks) when a
// batch is open, taking `partial`; false (nothing done) otherwise.
bool column_sum_defer(float* const* dst, int K, Scratch<float>& partial, int chunks, int C);

// dst[k][c] += sum over chunks j of partial[j][k][c] (partial: [chunks][K][C]); queued instead
// when a ColumnSumBatch is open (it then takes the partials).
template <int K>
void column_sum_finish(ColumnTargets<K> dst, Scratch<float>&& partial, int chunks, int C) {
  if (column_sum_defer(dst.dst, K, partial, chunks, C)) return;
  column_sum_final_wide_kernel<K><<<dim3(ceil_div(C, 32), K), dim3(32, kFinishRows), 0, stream()>>>(
      dst, partial.get(), chunks, C);
  GPT_CUDA_CHECK_LAUNCH();
}

// Column sums of a bf16 matrix x [N, C] (C % 8 == 0, x 16-byte aligned): blocks of 256 columns
// (8 per thread, one 16-byte load) × kBf16SumRows rows; thread row y (of 8) adds rows
// r0 + y, r0 + y + 8, ... in order, then thread t adds the 8 thread rows' sums for column t in
// order into partial[chunk][c].
inline constexpr int kBf16SumRows = 64;

static __global__ void __launch_bounds__(256) column_sum_bf16_partial_kernel(float* __restrict__ partial,
                                                                      const bf16* __restrict__ x,
                                                                      int N, int C) {
  __shared__ __align__(16) float sh[8][256];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int c0 = blockIdx.x * 256 + tx * 8;
  const int r0 = blockIdx.y * kBf16SumRows, r1 = min(N, r0 + kBf16SumRows);
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  if (c0 < C)
    for (int r = r0 + ty; r < r1; r += 8) {
      const uint4 u = *reinterpret_cast<const uint4*>(x + size_t(r) * C + c0);
      const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 f = __bfloat1622float2(h[k]);
        acc[2 * k] += f.x;
        acc[2 * k + 1] += f.y;
      }
    }
  float4* s4 = reinterpret_cast<float4*>(&sh[ty][tx * 8]);
  s4[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
  s4[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  __syncthreads();
  const int c = blockIdx.x * 256 + threadIdx.x;
  if (c >= C) return;
  float t = 0.0f;
#pragma unroll
  for (int y = 0; y < 8; ++y) t += sh[y][threadIdx.x];
  partial[size_t(blockIdx.y) * C + c] = t;
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
