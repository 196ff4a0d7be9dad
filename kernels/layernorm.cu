#include "kernels/layernorm.cuh"

#include "kernels/column_sum.cuh"
#include "train/backend/ops.h"

namespace gpt::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ void store_as(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_as(bf16* p, float v) { *p = __float2bfloat16_rn(v); }

template <class Out>
__global__ void layernorm_forward_kernel(Out* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  float s = 0.0f;
  for (int c = lane; c < C; c += 32) s += x[c];
  const float m = warp_sum(s) / C;
  float v = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float d = x[c] - m;
    v += d * d;
  }
  const float r = 1.0f / sqrtf(warp_sum(v) / C + kLayerNormEps);  // as the CPU (rsqrtf is 2 ulp)
  Out* o = out + size_t(row) * C;
  for (int c = lane; c < C; c += 32) store_as(o + c, (x[c] - m) * r * weight[c] + bias[c]);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// dinp += ...; dinp_h (when not nullptr) gets the bf16 rounding of the new dinp.
__global__ void layernorm_backward_input_kernel(float* dinp, bf16* dinp_h, const float* dout,
                                                const float* inp,
                                                const float* weight, const float* mean,
                                                const float* rstd, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  const float* d = dout + size_t(row) * C;
  const float m = mean[row], s = rstd[row];
  float dn_sum = 0.0f, dn_xhat_sum = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float dn = d[c] * weight[c];
    dn_sum += dn;
    dn_xhat_sum += dn * (x[c] - m) * s;
  }
  const float dn_mean = warp_sum(dn_sum) / C, dn_xhat_mean = warp_sum(dn_xhat_sum) / C;
  float* dx = dinp + size_t(row) * C;
  for (int c = lane; c < C; c += 32) {
    const float xhat = (x[c] - m) * s;
    const float v = dx[c] + s * (d[c] * weight[c] - dn_mean - xhat * dn_xhat_mean);
    dx[c] = v;
    if (dinp_h) dinp_h[size_t(row) * C + c] = __float2bfloat16_rn(v);
  }
}

// The backward with the parameter gradients fused (C <= 64·CPLH): one block of 8 warps per
// chunk of kFusedRows rows. Two warps share a row, each taking every other 32-column strip
// (columns 64k + 32h + lane), and swap their halves of the row sums through shared memory at
// a named barrier of the pair; the 4 pairs take rows r0 + p, r0 + p + 4, ... Each lane keeps
// register partials of dweight, dbias (and, with K = 3, the column sums of the updated dinp)
// for its columns; the 4 pairs' partials are then added in pair order into
// partial[chunk][K][C], which column_sum_final_wide_kernel adds up.
// Measured on an H100 (124M, B·T 16384): with one warp per row (128 registers, 16 warps/SM)
// 148 µs per call, against 112 µs for the input gradient alone plus ~70 µs for the separate
// column sums; keeping the row in registers (184 registers) or the partials in shared memory
// (fewer warps' worth of L1 for the re-read) were slower. Sharing a row halves the partials:
// 64 registers, 32 warps/SM.
constexpr int kFusedRows = 32, kFusedPairs = 4;

// Waits for both warps of a pair (barrier ids 1-4; 0 is __syncthreads'). Immediate ids keep
// ptxas from reserving all 16 barriers.
__device__ __forceinline__ void pair_barrier(int pair) {
  switch (pair) {
    case 0: asm volatile("bar.sync 1, 64;" ::: "memory"); break;
    case 1: asm volatile("bar.sync 2, 64;" ::: "memory"); break;
    case 2: asm volatile("bar.sync 3, 64;" ::: "memory"); break;
    default: asm volatile("bar.sync 4, 64;" ::: "memory"); break;
  }
}

template <int CPLH, int K>
__global__ void __launch_bounds__(256, 4) layernorm_backward_fused_kernel(
    float* __restrict__ dinp, bf16* __restrict__ dinp_h, float* __restrict__ partial,
    const float* __restrict__ dout, const float* __restrict__ inp,
    const float* __restrict__ weight, const float* __restrict__ mean,
    const float* __restrict__ rstd, int N, int C) {
  extern __shared__ float sh[];                    // [kFusedPairs][C] for the final sum
  __shared__ float2 row_sums[2][2 * kFusedPairs];  // [row parity][warp]: its half of the row sums
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, pair = warp / 2, half = warp % 2;
  const int r0 = blockIdx.x * kFusedRows, r1 = min(N, r0 + kFusedRows);
  float acc[K][CPLH];
#pragma unroll
  for (int q = 0; q < K; ++q)
#pragma unroll
    for (int k = 0; k < CPLH; ++k) acc[q][k] = 0.0f;
  // Two passes over each row as in layernorm_backward_input_kernel; the second reads the row
  // again from L1 (keeping it in registers costs occupancy, and this kernel is memory bound).
  int parity = 0;
  for (int row = r0 + pair; row < r1; row += kFusedPairs, parity ^= 1) {
    const float* x = inp + size_t(row) * C;
    const float* d = dout + size_t(row) * C;
    const float m = mean[row], s = rstd[row];
    float dn_sum = 0.0f, dn_xhat_sum = 0.0f;
#pragma unroll
    for (int k = 0; k < CPLH; ++k) {
      const int c = 64 * k + 32 * half + lane;
      if (c >= C) continue;
      const float xh = (x[c] - m) * s, dv = d[c], dn = dv * weight[c];
      dn_sum += dn;
      dn_xhat_sum += dn * xh;
      acc[0][k] += dv * xh;
      acc[1][k] += dv;
    }
    dn_sum = warp_sum(dn_sum);
    dn_xhat_sum = warp_sum(dn_xhat_sum);
    // The slot of this parity was last read two rows ago, before the pair's previous barrier.
    if (lane == 0) row_sums[parity][warp] = make_float2(dn_sum, dn_xhat_sum);
    pair_barrier(pair);
    const float2 a = row_sums[parity][2 * pair], b = row_sums[parity][2 * pair + 1];
    const float dn_mean = (a.x + b.x) / C, dn_xhat_mean = (a.y + b.y) / C;  // same in both warps
    float* dx = dinp + size_t(row) * C;
#pragma unroll
    for (int k = 0; k < CPLH; ++k) {
      const int c = 64 * k + 32 * half + lane;
      if (c >= C) continue;
      const float xh = (x[c] - m) * s;
      const float v = dx[c] + s * (d[c] * weight[c] - dn_mean - xh * dn_xhat_mean);
      dx[c] = v;
      if (dinp_h) dinp_h[size_t(row) * C + c] = __float2bfloat16_rn(v);
      if constexpr (K == 3) acc[2][k] += v;
    }
  }
  for (int q = 0; q < K; ++q) {
#pragma unroll
    for (int k = 0; k < CPLH; ++k) {
      const int c = 64 * k + 32 * half + lane;
      if (c < C) sh[pair * C + c] = acc[q][k];
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      float t = 0.0f;
      for (int y = 0; y < kFusedPairs; ++y) t += sh[y * C + c];
      partial[(size_t(blockIdx.x) * K + q) * C + c] = t;
    }
    __syncthreads();
  }
}

template <int CPLH>
void layernorm_backward_fused(float* dinp, bf16* dinp_h, float* dweight, float* dbias,
                              float* dinp_colsum, const float* dout, const float* inp,
                              const float* weight, const float* mean, const float* rstd, int N,
                              int C) {
  const int chunks = int(ceil_div(N, kFusedRows)), K = dinp_colsum ? 3 : 2;
  const dim3 final_grid(ceil_div(C, 32)), final_block(32, kColSumThreadRows);
  Scratch<float> partial(size_t(chunks) * K * C);
  const size_t shared = kFusedPairs * size_t(C) * sizeof(float);  // <= 16 KB (C <= 1024)
  if (dinp_colsum) {
    layernorm_backward_fused_kernel<CPLH, 3><<<chunks, 256, shared, stream()>>>(
        dinp, dinp_h, partial, dout, inp, weight, mean, rstd, N, C);
    GPT_CUDA_CHECK_LAUNCH();
    column_sum_final_wide_kernel<3><<<final_grid, final_block, 0, stream()>>>(
        ColumnTargets<3>{{dweight, dbias, dinp_colsum}}, partial.get(), chunks, C);
  } else {
    layernorm_backward_fused_kernel<CPLH, 2><<<chunks, 256, shared, stream()>>>(
        dinp, dinp_h, partial, dout, inp, weight, mean, rstd, N, C);
    GPT_CUDA_CHECK_LAUNCH();
    column_sum_final_wide_kernel<2><<<final_grid, final_block, 0, stream()>>>(
        ColumnTargets<2>{{dweight, dbias}}, partial.get(), chunks, C);
  }
  GPT_CUDA_CHECK_LAUNCH();
}

struct ColumnOf {
  const float* x;
  int C;
  __device__ void operator()(int r, int c, float v[1]) const { v[0] = x[size_t(r) * C + c]; }
};

struct LayerNormParamGrad {
  const float *dout, *inp, *mean, *rstd;
  int C;
  __device__ void operator()(int r, int c, float v[2]) const {
    const float d = dout[size_t(r) * C + c];
    v[0] = d * (inp[size_t(r) * C + c] - mean[r]) * rstd[r];
    v[1] = d;
  }
};

template <class Out>
void layernorm_forward_any(Out* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int B, int T, int C) {
  const int N = B * T;
  if (N == 0) return;
  layernorm_forward_kernel<Out><<<ceil_div(N, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream()>>>(
      out, mean, rstd, inp, weight, bias, N, C);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int B, int T, int C) {
  layernorm_forward_any(out, mean, rstd, inp, weight, bias, B, T, C);
}

void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int B, int T, int C) {
  layernorm_forward_any(out, mean, rstd, inp, weight, bias, B, T, C);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C, bf16* dinp_h,
                        float* dinp_colsum) {
  const int N = B * T;
  if (N == 0) return;
  // Up to C = 1024 (every GPT-2 size but XL): one pass that also sums the parameter gradients.
  const auto fused = [&](auto f) {
    f(dinp, dinp_h, dweight, dbias, dinp_colsum, dout, inp, weight, mean, rstd, N, C);
  };
  if (C <= 256) return fused(layernorm_backward_fused<4>);
  if (C <= 512) return fused(layernorm_backward_fused<8>);
  if (C <= 768) return fused(layernorm_backward_fused<12>);
  if (C <= 1024) return fused(layernorm_backward_fused<16>);
  layernorm_backward_input_kernel<<<ceil_div(N, kWarpsPerBlock), kWarpsPerBlock * 32, 0,
                                    stream()>>>(dinp, dinp_h, dout, inp, weight, mean, rstd, N, C);
  GPT_CUDA_CHECK_LAUNCH();
  column_sum_add<2>(ColumnTargets<2>{{dweight, dbias}}, LayerNormParamGrad{dout, inp, mean, rstd, C},
                    N, C);
  if (dinp_colsum) column_sum_add<1>(ColumnTargets<1>{{dinp_colsum}}, ColumnOf{dinp, C}, N, C);
}

}  // namespace gpt::cuda
