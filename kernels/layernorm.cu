#include "kernels/layernorm.cuh"

#include <cstdint>
#include <type_traits>

#include "kernels/column_sum.cuh"
#include "train/backend/ops.h"

namespace gpt::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ void store_as(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_as(bf16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ float as_float(float v) { return v; }
__device__ __forceinline__ float as_float(bf16 v) { return __bfloat162float(v); }

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
template <class DT>
__global__ void layernorm_backward_input_kernel(float* dinp, bf16* dinp_h, const DT* dout,
                                                const float* inp,
                                                const float* weight, const float* mean,
                                                const float* rstd, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  const DT* d = dout + size_t(row) * C;
  const float m = mean[row], s = rstd[row];
  float dn_sum = 0.0f, dn_xhat_sum = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float dn = as_float(d[c]) * weight[c];
    dn_sum += dn;
    dn_xhat_sum += dn * (x[c] - m) * s;
  }
  const float dn_mean = warp_sum(dn_sum) / C, dn_xhat_mean = warp_sum(dn_xhat_sum) / C;
  float* dx = dinp + size_t(row) * C;
  for (int c = lane; c < C; c += 32) {
    const float xhat = (x[c] - m) * s;
    const float v = dx[c] + s * (as_float(d[c]) * weight[c] - dn_mean - xhat * dn_xhat_mean);
    dx[c] = v;
    if (dinp_h) dinp_h[size_t(row) * C + c] = __float2bfloat16_rn(v);
  }
}

// The backward with the parameter gradients fused, for C % 4 != 0 (C <= 64·CPLH; the 16-byte
// row kernel below takes C % 4 == 0): one block of 8 warps per
// chunk of kFusedRows rows. Two warps share a row, each taking every other 32-column strip
// (columns 64k + 32h + lane), and swap their halves of the row sums through shared memory at
// a named barrier of the pair; the 4 pairs take rows r0 + p, r0 + p + 4, ... Each lane keeps
// register partials of dweight, dbias (and, with K = 3, the column sums of the updated dinp)
// for its columns; the 4 pairs' partials are then added in pair order into
// partial[chunk][K][C], which column_sum_finish adds up.
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

template <int CPLH, int K, class DT>
__global__ void __launch_bounds__(256, 4) layernorm_backward_fused_kernel(
    float* __restrict__ dinp, bf16* __restrict__ dinp_h, float* __restrict__ partial,
    const DT* __restrict__ dout, const float* __restrict__ inp,
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
    const DT* d = dout + size_t(row) * C;
    const float m = mean[row], s = rstd[row];
    float dn_sum = 0.0f, dn_xhat_sum = 0.0f;
#pragma unroll
    for (int k = 0; k < CPLH; ++k) {
      const int c = 64 * k + 32 * half + lane;
      if (c >= C) continue;
      const float xh = (x[c] - m) * s, dv = as_float(d[c]), dn = dv * weight[c];
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
      const float v = dx[c] + s * (as_float(d[c]) * weight[c] - dn_mean - xh * dn_xhat_mean);
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

// The fused backward for C % 4 == 0 (C <= 1024), written for memory bandwidth: one warp per
// row with the whole row in registers (16-byte loads of inp and dinp, 8-byte loads of a bf16
// dout; lane l owns the column groups 4·(l + 32j)), so each warp has a row's loads in flight
// with no exchange between warps. The parameter-gradient partials (and the column sums of the
// new dinp) go to a shared-memory slice per warp instead of registers, which keeps the kernel at
// about 64 registers; the block then adds its 8 warps' slices in warp order into
// partial[block][K][C]. Each warp takes rows r0 + w, r0 + w + 8, ... of its block's kVecRows.
constexpr int kVecWarps = 8, kVecRows = 32;

__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 load4(const bf16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void add4(float4& a, float4 b) {
  a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
}

template <int NV, int K, class DT>
__global__ void __launch_bounds__(kVecWarps * 32, 2) layernorm_backward_vec_kernel(
    float* __restrict__ dinp, bf16* __restrict__ dinp_h, float* __restrict__ partial,
    const DT* __restrict__ dout, const float* __restrict__ inp,
    const float* __restrict__ weight, const float* __restrict__ mean,
    const float* __restrict__ rstd, int N, int C) {
  extern __shared__ float4 slices[];  // [warp][K][NV][32]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, C4 = C / 4;
  float4* mine = slices + size_t(warp) * K * NV * 32;
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int q = 0; q < K; ++q)
#pragma unroll
    for (int j = 0; j < NV; ++j) mine[(q * NV + j) * 32 + lane] = zero;
  const int r0 = blockIdx.x * kVecRows;
  for (int row = r0 + warp; row < min(N, r0 + kVecRows); row += kVecWarps) {
    const float4* x4 = reinterpret_cast<const float4*>(inp + size_t(row) * C);
    float4* dx4 = reinterpret_cast<float4*>(dinp + size_t(row) * C);
    const DT* d = dout + size_t(row) * C;
    float4 x[NV], dv[NV], g[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int c4 = lane + 32 * j;
      x[j] = dv[j] = g[j] = zero;
      if (c4 < C4) {
        x[j] = x4[c4];
        dv[j] = load4(d + 4 * c4);
        g[j] = dx4[c4];
      }
    }
    const float m = mean[row], s = rstd[row];
    float dn_sum = 0.0f, dn_xhat_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int c4 = lane + 32 * j;
      if (c4 >= C4) continue;
      const float4 w = reinterpret_cast<const float4*>(weight)[c4];
      x[j] = make_float4((x[j].x - m) * s, (x[j].y - m) * s, (x[j].z - m) * s, (x[j].w - m) * s);
      const float4 dn = make_float4(dv[j].x * w.x, dv[j].y * w.y, dv[j].z * w.z, dv[j].w * w.w);
      dn_sum += (dn.x + dn.y) + (dn.z + dn.w);
      dn_xhat_sum += (dn.x * x[j].x + dn.y * x[j].y) + (dn.z * x[j].z + dn.w * x[j].w);
    }
    const float dn_mean = warp_sum(dn_sum) / C, dn_xhat_mean = warp_sum(dn_xhat_sum) / C;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int c4 = lane + 32 * j;
      if (c4 >= C4) continue;
      const float4 w = reinterpret_cast<const float4*>(weight)[c4];
      const float4 xh = x[j], dd = dv[j];
      float4 v = g[j];
      v.x += s * (dd.x * w.x - dn_mean - xh.x * dn_xhat_mean);
      v.y += s * (dd.y * w.y - dn_mean - xh.y * dn_xhat_mean);
      v.z += s * (dd.z * w.z - dn_mean - xh.z * dn_xhat_mean);
      v.w += s * (dd.w * w.w - dn_mean - xh.w * dn_xhat_mean);
      dx4[c4] = v;
      if (dinp_h) {
        __nv_bfloat162 h[2] = {__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
        *reinterpret_cast<uint2*>(dinp_h + size_t(row) * C + 4 * c4) = *reinterpret_cast<uint2*>(h);
      }
      add4(mine[j * 32 + lane], make_float4(dd.x * xh.x, dd.y * xh.y, dd.z * xh.z, dd.w * xh.w));
      add4(mine[(NV + j) * 32 + lane], dd);
      if constexpr (K == 3) add4(mine[(2 * NV + j) * 32 + lane], v);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < K * C4; i += blockDim.x) {
    const int q = i / C4, c4 = i % C4;
    const int slot = (q * NV + c4 / 32) * 32 + c4 % 32;
    float4 t = slices[slot];
    for (int y = 1; y < kVecWarps; ++y) add4(t, slices[size_t(y) * K * NV * 32 + slot]);
    reinterpret_cast<float4*>(partial + (size_t(blockIdx.x) * K + q) * C)[c4] = t;
  }
}

// Runs a fused backward kernel over N rows in chunks of `rows` (launch(K, partial, chunks), K = 3
// with the column sums of dinp, else 2), then adds its per-chunk partials [chunk][K][C] to the
// gradients.
template <class Launch>
void layernorm_backward_chunked(Launch launch, int rows, float* dweight, float* dbias,
                                float* dinp_colsum, int N, int C) {
  const int chunks = int(ceil_div(N, rows));
  Scratch<float> partial(size_t(chunks) * (dinp_colsum ? 3 : 2) * C);
  if (dinp_colsum) {
    launch(std::integral_constant<int, 3>{}, partial.get(), chunks);
    column_sum_finish<3>({{dweight, dbias, dinp_colsum}}, std::move(partial), chunks, C);
  } else {
    launch(std::integral_constant<int, 2>{}, partial.get(), chunks);
    column_sum_finish<2>({{dweight, dbias}}, std::move(partial), chunks, C);
  }
}

template <int NV, class DT>
void layernorm_backward_vec(float* dinp, bf16* dinp_h, float* dweight, float* dbias,
                            float* dinp_colsum, const DT* dout, const float* inp,
                            const float* weight, const float* mean, const float* rstd, int N,
                            int C) {
  const auto launch = [&](auto k, float* partial, int chunks) {
    constexpr int K = decltype(k)::value;
    const size_t shared = size_t(kVecWarps) * K * NV * 32 * sizeof(float4);  // <= 96 KB
    const auto kernel = layernorm_backward_vec_kernel<NV, K, DT>;
    GPT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(shared)));
    kernel<<<chunks, kVecWarps * 32, shared, stream()>>>(dinp, dinp_h, partial, dout, inp, weight,
                                                         mean, rstd, N, C);
    GPT_CUDA_CHECK_LAUNCH();
  };
  layernorm_backward_chunked(launch, kVecRows, dweight, dbias, dinp_colsum, N, C);
}

template <int CPLH, class DT>
void layernorm_backward_fused(float* dinp, bf16* dinp_h, float* dweight, float* dbias,
                              float* dinp_colsum, const DT* dout, const float* inp,
                              const float* weight, const float* mean, const float* rstd, int N,
                              int C) {
  const auto launch = [&](auto k, float* partial, int chunks) {
    const size_t shared = kFusedPairs * size_t(C) * sizeof(float);  // <= 16 KB (C <= 1024)
    layernorm_backward_fused_kernel<CPLH, decltype(k)::value, DT><<<chunks, 256, shared, stream()>>>(
        dinp, dinp_h, partial, dout, inp, weight, mean, rstd, N, C);
    GPT_CUDA_CHECK_LAUNCH();
  };
  layernorm_backward_chunked(launch, kFusedRows, dweight, dbias, dinp_colsum, N, C);
}

struct ColumnOf {
  const float* x;
  int C;
  __device__ void operator()(int r, int c, float v[1]) const { v[0] = x[size_t(r) * C + c]; }
};

template <class DT>
struct LayerNormParamGrad {
  const DT* dout;
  const float *inp, *mean, *rstd;
  int C;
  __device__ void operator()(int r, int c, float v[2]) const {
    const float d = as_float(dout[size_t(r) * C + c]);
    v[0] = d * (inp[size_t(r) * C + c] - mean[r]) * rstd[r];
    v[1] = d;
  }
};

// The forward for C % 4 == 0 (C <= 1024): one warp per row held in registers (16-byte loads,
// lane l owns the column groups 4·(l + 32j)), mean and variance from the registers in two
// passes, as layernorm_forward_kernel computes them but with 16-byte traffic.
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(bf16* p, float4 v) {
  __nv_bfloat162 h[2] = {__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
  *reinterpret_cast<uint2*>(p) = *reinterpret_cast<uint2*>(h);
}

// With a branch: the row is inp + branch (bf16), stored to res_out before it is normalised.
template <int NV, class Out>
__global__ void layernorm_forward_vec_kernel(Out* __restrict__ out, float* __restrict__ mean,
                                             float* __restrict__ rstd, const float* __restrict__ inp,
                                             const float* __restrict__ weight,
                                             const float* __restrict__ bias, int N, int C,
                                             const bf16* __restrict__ branch = nullptr,
                                             float* __restrict__ res_out = nullptr) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const int C4 = C / 4;
  const float4* x4 = reinterpret_cast<const float4*>(inp + size_t(row) * C);
  float4 x[NV];
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c4 = lane + 32 * j;
    x[j] = c4 < C4 ? x4[c4] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (branch && c4 < C4) {
      const uint2 u = reinterpret_cast<const uint2*>(branch + size_t(row) * C)[c4];
      const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
      const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
      x[j] = make_float4(x[j].x + lo.x, x[j].y + lo.y, x[j].z + hi.x, x[j].w + hi.y);
      reinterpret_cast<float4*>(res_out + size_t(row) * C)[c4] = x[j];
    }
    sum += (x[j].x + x[j].y) + (x[j].z + x[j].w);
  }
  const float m = warp_sum(sum) / C;
  float var = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    if (lane + 32 * j >= C4) continue;
    const float a = x[j].x - m, b = x[j].y - m, c = x[j].z - m, d = x[j].w - m;
    var += (a * a + b * b) + (c * c + d * d);
  }
  const float r = 1.0f / sqrtf(warp_sum(var) / C + kLayerNormEps);  // as the CPU (rsqrtf is 2 ulp)
  Out* o = out + size_t(row) * C;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c4 = lane + 32 * j;
    if (c4 >= C4) continue;
    const float4 w = reinterpret_cast<const float4*>(weight)[c4];
    const float4 b = reinterpret_cast<const float4*>(bias)[c4];
    store4(o + 4 * c4, make_float4((x[j].x - m) * r * w.x + b.x, (x[j].y - m) * r * w.y + b.y,
                                   (x[j].z - m) * r * w.z + b.z, (x[j].w - m) * r * w.w + b.w));
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

__global__ void residual_add_bf16_kernel(float* out, const float* a, const bf16* b, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + __bfloat162float(b[i]);
}

// With branch: LayerNorm of inp + branch, the sum stored to res_out (see layernorm.cuh).
template <class Out>
void layernorm_forward_any(Out* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int B, int T, int C,
                           const bf16* branch = nullptr, float* res_out = nullptr) {
  const int N = B * T;
  if (N == 0) return;
  const unsigned grid = ceil_div(N, kWarpsPerBlock), block = kWarpsPerBlock * 32;
  const bool vec16 = reinterpret_cast<uintptr_t>(inp) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(branch) % 8 == 0 &&
                     reinterpret_cast<uintptr_t>(res_out) % 16 == 0;
  if (branch && !(C % 4 == 0 && C <= 1024 && vec16)) {
    // Other shapes: the add in a pass of its own, then the plain LayerNorm of the sum.
    const size_t n = size_t(N) * C;
    residual_add_bf16_kernel<<<ceil_div(n, 256), 256, 0, stream()>>>(res_out, inp, branch, n);
    GPT_CUDA_CHECK_LAUNCH();
    return layernorm_forward_any(out, mean, rstd, res_out, weight, bias, B, T, C);
  }
  const auto vec = [&](auto kernel) {
    kernel<<<grid, block, 0, stream()>>>(out, mean, rstd, inp, weight, bias, N, C, branch,
                                         res_out);
    GPT_CUDA_CHECK_LAUNCH();
  };
  if (C % 4 == 0 && C <= 256) return vec(layernorm_forward_vec_kernel<2, Out>);
  if (C % 4 == 0 && C <= 512) return vec(layernorm_forward_vec_kernel<4, Out>);
  if (C % 4 == 0 && C <= 768) return vec(layernorm_forward_vec_kernel<6, Out>);
  if (C % 4 == 0 && C <= 1024) return vec(layernorm_forward_vec_kernel<8, Out>);
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

void layernorm_forward_residual_bf16(bf16* out, float* mean, float* rstd, float* res_out,
                                     const float* res_in, const bf16* branch, const float* weight,
                                     const float* bias, int B, int T, int C) {
  layernorm_forward_any(out, mean, rstd, res_in, weight, bias, B, T, C, branch, res_out);
}

template <class DT>
static void layernorm_backward_any(float* dinp, float* dweight, float* dbias, const DT* dout,
                            const float* inp, const float* weight, const float* mean,
                            const float* rstd, int B, int T, int C, bf16* dinp_h,
                            float* dinp_colsum) {
  const int N = B * T;
  if (N == 0) return;
  // Up to C = 1024 (every GPT-2 size but XL): one pass that also sums the parameter gradients.
  const auto fused = [&](auto f) {
    f(dinp, dinp_h, dweight, dbias, dinp_colsum, dout, inp, weight, mean, rstd, N, C);
  };
  // Rows of 16-byte vectors when C % 4 == 0 (H100, GPT-2 124M at micro-batch 16: 76 µs per
  // call against 121 µs for the warp-pair kernel below).
  if (C % 4 == 0) {
    if (C <= 256) return fused(layernorm_backward_vec<2, DT>);
    if (C <= 512) return fused(layernorm_backward_vec<4, DT>);
    if (C <= 768) return fused(layernorm_backward_vec<6, DT>);
    if (C <= 1024) return fused(layernorm_backward_vec<8, DT>);
  }
  if (C <= 256) return fused(layernorm_backward_fused<4, DT>);
  if (C <= 512) return fused(layernorm_backward_fused<8, DT>);
  if (C <= 768) return fused(layernorm_backward_fused<12, DT>);
  if (C <= 1024) return fused(layernorm_backward_fused<16, DT>);
  layernorm_backward_input_kernel<DT><<<ceil_div(N, kWarpsPerBlock), kWarpsPerBlock * 32, 0,
                                        stream()>>>(dinp, dinp_h, dout, inp, weight, mean, rstd,
                                                    N, C);
  GPT_CUDA_CHECK_LAUNCH();
  column_sum_add<2>(ColumnTargets<2>{{dweight, dbias}},
                    LayerNormParamGrad<DT>{dout, inp, mean, rstd, C}, N, C);
  if (dinp_colsum) column_sum_add<1>(ColumnTargets<1>{{dinp_colsum}}, ColumnOf{dinp, C}, N, C);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C, bf16* dinp_h,
                        float* dinp_colsum) {
  layernorm_backward_any(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C, dinp_h,
                         dinp_colsum);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const bf16* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C, bf16* dinp_h,
                        float* dinp_colsum) {
  layernorm_backward_any(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C, dinp_h,
                         dinp_colsum);
}

}  // namespace gpt::cuda
