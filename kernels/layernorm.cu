#include "kernels/layernorm.cuh"

#include <cstdint>
#include <type_traits>

#include "kernels/column_sum.cuh"
#include "kernels/ops.h"

namespace gpt::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
// The widest row the 16-byte kernels take (hidden sizes up to NeMo's 5B); wider rows, and rows
// with C % 4 != 0, take the scalar kernels.
constexpr int kVecMaxC = 4096;

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
// Sharing a row halves the partials (64 registers, 32 warps/SM); one warp per row (128
// registers), the row kept in registers or the partials in shared memory were slower.
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

__device__ __forceinline__ void add4(float4& a, float4 b) {
  a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
}

// The backward for C % 4 == 0 (C <= kVecMaxC), one block per chunk of kRowsRows rows, taken one
// after the other: the block's ceil(C / 8 / 32) warps (at most MaxWarps) share a row, each
// thread holding two 16-byte column groups (4·(t + TB·j), j = 0, 1) of x, dout and the residual
// gradient, with the next row's loads already in flight while this one is computed. The two row
// sums meet across the warps in shared memory (double-buffered by row parity, one barrier per
// row), and each thread keeps its columns' parameter-gradient partials (and the column sums of
// the new dinp) in registers, written once per chunk to partial[chunk][K][C]. Faster than a warp
// per row adding its partials to shared memory for every row; rows copied ahead by cp.async and
// 16 or 64 rows per chunk were no faster. DROP: the bf16 copy and the column sums are of
// drop(dinp) (layernorm.cuh).
constexpr int kRowsRows = 32;

template <class DT>
struct RowIn;
template <>
struct RowIn<bf16> {
  using Packed = uint2;  // four bf16
  static __device__ __forceinline__ Packed load(const bf16* p) {
    return *reinterpret_cast<const uint2*>(p);
  }
  static __device__ __forceinline__ float4 unpack(Packed u) {
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
    return make_float4(a.x, a.y, b.x, b.y);
  }
};
template <>
struct RowIn<float> {
  using Packed = float4;
  static __device__ __forceinline__ Packed load(const float* p) {
    return *reinterpret_cast<const float4*>(p);
  }
  static __device__ __forceinline__ float4 unpack(Packed u) { return u; }
};

template <int K, class DT, int MaxWarps, bool DROP>
__global__ void __launch_bounds__(32 * MaxWarps) layernorm_backward_rows_kernel(
    float* __restrict__ dinp, bf16* __restrict__ dinp_h, float* __restrict__ partial,
    const DT* __restrict__ dout, const float* __restrict__ inp,
    const float* __restrict__ weight, const float* __restrict__ mean,
    const float* __restrict__ rstd, int N, int C, const HiddenDropout site) {
  using In = RowIn<DT>;
  const HiddenDropout drop = site.resolved();
  constexpr int NJ = 2;
  __shared__ float2 sums[2][MaxWarps];  // [row parity][warp]: the warps' (dn, dn·x̂) sums
  const int TB = blockDim.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32, C4 = C / 4;
  const int nwarps = TB / 32;
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
  bool has[NJ];
  float4 w[NJ];
#pragma unroll
  for (int j = 0; j < NJ; ++j) {
    const int c4 = threadIdx.x + TB * j;
    has[j] = c4 < C4;
    w[j] = has[j] ? reinterpret_cast<const float4*>(weight)[c4] : zero;
  }
  float4 acc[K][NJ];  // dweight, dbias (and the column sums of dinp) over the chunk's rows
#pragma unroll
  for (int q = 0; q < K; ++q)
#pragma unroll
    for (int j = 0; j < NJ; ++j) acc[q][j] = zero;

  const int r0 = blockIdx.x * kRowsRows, r1 = min(N, r0 + kRowsRows);
  // One row's inputs: this thread's groups of x, dout (packed), the residual gradient, and the
  // row's statistics.
  struct Row {
    float4 x[NJ], g[NJ];
    typename In::Packed d[NJ];
    float m, s;
  };
  auto load_row = [&](Row& r, int row) {
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
      const size_t i = size_t(row) * C + 4 * (threadIdx.x + TB * j);
      if (has[j]) {
        r.x[j] = *reinterpret_cast<const float4*>(inp + i);
        r.d[j] = In::load(dout + i);
        r.g[j] = *reinterpret_cast<const float4*>(dinp + i);
      }
    }
    r.m = mean[row];
    r.s = rstd[row];
  };
  Row cur, nxt;
  if (r0 < r1) load_row(cur, r0);
  for (int row = r0; row < r1; ++row) {
    if (row + 1 < r1) load_row(nxt, row + 1);
    const float m = cur.m, s = cur.s;
    float dn_sum = 0.0f, dn_xhat_sum = 0.0f;
    float4 xh[NJ], dd[NJ];
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
      if (!has[j]) continue;
      const float4 x = cur.x[j];
      xh[j] = make_float4((x.x - m) * s, (x.y - m) * s, (x.z - m) * s, (x.w - m) * s);
      dd[j] = In::unpack(cur.d[j]);
      const float4 dn = make_float4(dd[j].x * w[j].x, dd[j].y * w[j].y, dd[j].z * w[j].z,
                                    dd[j].w * w[j].w);
      dn_sum += (dn.x + dn.y) + (dn.z + dn.w);
      dn_xhat_sum += (dn.x * xh[j].x + dn.y * xh[j].y) + (dn.z * xh[j].z + dn.w * xh[j].w);
    }
    dn_sum = warp_sum(dn_sum);
    dn_xhat_sum = warp_sum(dn_xhat_sum);
    const int parity = (row - r0) & 1;
    if (lane == 0) sums[parity][warp] = make_float2(dn_sum, dn_xhat_sum);
    __syncthreads();
    float2 tot = sums[parity][0];
    for (int k = 1; k < nwarps; ++k) {
      const float2 v = sums[parity][k];
      tot.x += v.x;
      tot.y += v.y;
    }
    const float dn_mean = tot.x / C, dn_xhat_mean = tot.y / C;
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
      if (!has[j]) continue;
      const size_t i = size_t(row) * C + 4 * (threadIdx.x + TB * j);
      const float4 d = dd[j], x = xh[j];
      float4 v = cur.g[j];
      v.x += s * (d.x * w[j].x - dn_mean - x.x * dn_xhat_mean);
      v.y += s * (d.y * w[j].y - dn_mean - x.y * dn_xhat_mean);
      v.z += s * (d.z * w[j].z - dn_mean - x.z * dn_xhat_mean);
      v.w += s * (d.w * w[j].w - dn_mean - x.w * dn_xhat_mean);
      *reinterpret_cast<float4*>(dinp + i) = v;
      if constexpr (DROP) v = drop(v, i);  // i % 4 == 0: one mask word
      if (dinp_h) {
        __nv_bfloat162 h[2] = {__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
        *reinterpret_cast<uint2*>(dinp_h + i) = *reinterpret_cast<uint2*>(h);
      }
      add4(acc[0][j], make_float4(d.x * x.x, d.y * x.y, d.z * x.z, d.w * x.w));
      add4(acc[1][j], d);
      if constexpr (K == 3) add4(acc[2][j], v);
    }
    cur = nxt;
  }
#pragma unroll
  for (int q = 0; q < K; ++q) {
    float4* out = reinterpret_cast<float4*>(partial + (size_t(blockIdx.x) * K + q) * C);
#pragma unroll
    for (int j = 0; j < NJ; ++j)
      if (has[j]) out[threadIdx.x + TB * j] = acc[q][j];
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

template <class DT>
void layernorm_backward_rows(float* dinp, bf16* dinp_h, float* dweight, float* dbias,
                             float* dinp_colsum, const DT* dout, const float* inp,
                             const float* weight, const float* mean, const float* rstd, int N,
                             int C, const HiddenDropout& drop) {
  const int threads = 32 * int(ceil_div(C / 4, 2 * 32));  // two 16-byte groups per thread
  // GPT-2's widths (C <= 1024) keep the 128-thread bound, which leaves the compiler every register.
  const auto launch = [&](auto k, float* partial, int chunks) {
    constexpr int K = decltype(k)::value;
    const auto run = [&](auto kernel) {
      kernel<<<chunks, threads, 0, stream()>>>(dinp, dinp_h, partial, dout, inp, weight, mean,
                                               rstd, N, C, drop);
      GPT_CUDA_CHECK_LAUNCH();
    };
    if (C <= 1024)
      drop.on ? run(layernorm_backward_rows_kernel<K, DT, 4, true>)
              : run(layernorm_backward_rows_kernel<K, DT, 4, false>);
    else
      drop.on ? run(layernorm_backward_rows_kernel<K, DT, kVecMaxC / 256, true>)
              : run(layernorm_backward_rows_kernel<K, DT, kVecMaxC / 256, false>);
  };
  layernorm_backward_chunked(launch, kRowsRows, dweight, dbias, dinp_colsum, N, C);
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
  HiddenDropout drop;
  __device__ void operator()(int r, int c, float v[1]) const {
    const size_t i = size_t(r) * C + c;
    v[0] = drop.on ? drop.resolved()(x[i], i) : x[i];
  }
};

// dinp_h = bf16(drop(dinp)): the widths whose backward kernels leave the dropout to a pass after.
__global__ void dropped_bf16_kernel(bf16* out, const float* in, size_t n,
                                    const HiddenDropout site) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16_rn(site.resolved()(in[i], i));
}

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

// The forward for C % 4 == 0 (C <= kVecMaxC): WPR warps per row held in registers (16-byte loads,
// lane l of the row's warp w owning the column groups 4·(32w + l + 32·WPR·j)), mean and variance
// from the registers in two passes, as layernorm_forward_kernel computes them but with 16-byte
// traffic; the WPR warps' sums meet in shared memory in a fixed order. Rows past 1024 take two
// warps: half the registers a thread, twice the warps an SM, so that a row's dependent chain
// (the branch's dropout hash, the two sums) hides under the other rows' loads.
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(bf16* p, float4 v) {
  __nv_bfloat162 h[2] = {__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
  *reinterpret_cast<uint2*>(p) = *reinterpret_cast<uint2*>(h);
}

// The row's total of each warp's v (a warp sum): the WPR warps' parts added in warp order. Every
// thread of the block calls it (it may hold a barrier); buf is the call's own shared slots.
template <int WPR>
__device__ __forceinline__ float row_total(float v, float* buf) {
  v = warp_sum(v);
  if constexpr (WPR == 1) {
    return v;
  } else {
    const int warp = threadIdx.x / 32, first = warp - warp % WPR;
    if (threadIdx.x % 32 == 0) buf[warp] = v;
    __syncthreads();
    float t = buf[first];
#pragma unroll
    for (int k = 1; k < WPR; ++k) t += buf[first + k];
    return t;
  }
}

// With a branch: the row is inp + branch (bf16; DROP: + drop(branch)), stored to res_out before
// it is normalised.
template <int NV, int WPR, class Out, bool DROP>
__global__ void layernorm_forward_vec_kernel(Out* __restrict__ out, float* __restrict__ mean,
                                             float* __restrict__ rstd, const float* __restrict__ inp,
                                             const float* __restrict__ weight,
                                             const float* __restrict__ bias, int N, int C,
                                             const bf16* __restrict__ branch,
                                             float* __restrict__ res_out,
                                             const HiddenDropout site) {
  const HiddenDropout drop = site.resolved();
  // [the mean's, the variance's sums][warp]: two slots, so the second sum's writes never meet the
  // first's reads.
  __shared__ float sums[2][kWarpsPerBlock];
  const int warp = threadIdx.x / 32;
  const int row = blockIdx.x * (kWarpsPerBlock / WPR) + warp / WPR;
  const int col0 = 32 * (warp % WPR) + threadIdx.x % 32;  // the thread's first column group
  if (WPR == 1 && row >= N) return;
  const bool live = row < N;  // rows past N hold the barriers of the others (WPR > 1)
  const int C4 = live ? C / 4 : 0;
  const float4* x4 = reinterpret_cast<const float4*>(inp + size_t(row) * C);
  float4 x[NV];
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c4 = col0 + 32 * WPR * j;
    x[j] = c4 < C4 ? x4[c4] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (branch && c4 < C4) {
      const uint2 u = reinterpret_cast<const uint2*>(branch + size_t(row) * C)[c4];
      const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
      const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
      float4 b = make_float4(lo.x, lo.y, hi.x, hi.y);
      if constexpr (DROP) b = drop(b, size_t(row) * C + 4 * c4);  // one mask word
      x[j] = make_float4(x[j].x + b.x, x[j].y + b.y, x[j].z + b.z, x[j].w + b.w);
      reinterpret_cast<float4*>(res_out + size_t(row) * C)[c4] = x[j];
    }
    sum += (x[j].x + x[j].y) + (x[j].z + x[j].w);
  }
  const float m = row_total<WPR>(sum, sums[0]) / C;
  float var = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    if (col0 + 32 * WPR * j >= C4) continue;
    const float a = x[j].x - m, b = x[j].y - m, c = x[j].z - m, d = x[j].w - m;
    var += (a * a + b * b) + (c * c + d * d);
  }
  // as the CPU (rsqrtf is 2 ulp)
  const float r = 1.0f / sqrtf(row_total<WPR>(var, sums[1]) / C + kLayerNormEps);
  if (!live) return;
  Out* o = out + size_t(row) * C;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c4 = col0 + 32 * WPR * j;
    if (c4 >= C4) continue;
    const float4 w = reinterpret_cast<const float4*>(weight)[c4];
    const float4 b = reinterpret_cast<const float4*>(bias)[c4];
    store4(o + 4 * c4, make_float4((x[j].x - m) * r * w.x + b.x, (x[j].y - m) * r * w.y + b.y,
                                   (x[j].z - m) * r * w.z + b.z, (x[j].w - m) * r * w.w + b.w));
  }
  if (threadIdx.x % (32 * WPR) == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

__global__ void residual_add_bf16_kernel(float* out, const float* a, const bf16* b, size_t n,
                                         const HiddenDropout site) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = __bfloat162float(b[i]);
  out[i] = a[i] + (site.on ? site.resolved()(v, i) : v);
}

// The 16-byte forward for C % 4 == 0 up to kVecMaxC; false for other widths.
template <bool DROP, class Out>
bool layernorm_forward_vec(Out* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int N, int C,
                           const bf16* branch, float* res_out, const HiddenDropout& drop) {
  if (C % 4 != 0 || C > kVecMaxC) return false;
  const auto vec = [&](auto kernel, int wpr) {
    kernel<<<ceil_div(N, kWarpsPerBlock / wpr), kWarpsPerBlock * 32, 0, stream()>>>(
        out, mean, rstd, inp, weight, bias, N, C, branch, res_out, drop);
    GPT_CUDA_CHECK_LAUNCH();
    return true;
  };
  if (C <= 256) return vec(layernorm_forward_vec_kernel<2, 1, Out, DROP>, 1);
  if (C <= 512) return vec(layernorm_forward_vec_kernel<4, 1, Out, DROP>, 1);
  if (C <= 768) return vec(layernorm_forward_vec_kernel<6, 1, Out, DROP>, 1);
  if (C <= 1024) return vec(layernorm_forward_vec_kernel<8, 1, Out, DROP>, 1);
  if (C <= 1536) return vec(layernorm_forward_vec_kernel<6, 2, Out, DROP>, 2);
  if (C <= 2048) return vec(layernorm_forward_vec_kernel<8, 2, Out, DROP>, 2);
  if (C <= 2560) return vec(layernorm_forward_vec_kernel<10, 2, Out, DROP>, 2);
  if (C <= 3072) return vec(layernorm_forward_vec_kernel<12, 2, Out, DROP>, 2);
  return vec(layernorm_forward_vec_kernel<16, 2, Out, DROP>, 2);
}

// With branch: LayerNorm of inp + branch (dropped by `drop`), the sum stored to res_out (see
// layernorm.cuh).
template <class Out>
void layernorm_forward_any(Out* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int B, int T, int C,
                           const bf16* branch = nullptr, float* res_out = nullptr,
                           const HiddenDropout& drop = {}) {
  const int N = B * T;
  if (N == 0) return;
  const bool vec16 = reinterpret_cast<uintptr_t>(inp) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(branch) % 8 == 0 &&
                     reinterpret_cast<uintptr_t>(res_out) % 16 == 0;
  if (branch && !(C % 4 == 0 && C <= kVecMaxC && vec16)) {
    // Other shapes: the add in a pass of its own, then the plain LayerNorm of the sum.
    const size_t n = size_t(N) * C;
    residual_add_bf16_kernel<<<ceil_div(n, 256), 256, 0, stream()>>>(res_out, inp, branch, n,
                                                                     drop);
    GPT_CUDA_CHECK_LAUNCH();
    return layernorm_forward_any(out, mean, rstd, res_out, weight, bias, B, T, C);
  }
  if (branch && drop.on
          ? layernorm_forward_vec<true>(out, mean, rstd, inp, weight, bias, N, C, branch, res_out,
                                        drop)
          : layernorm_forward_vec<false>(out, mean, rstd, inp, weight, bias, N, C, branch, res_out,
                                         drop))
    return;
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
                                     const float* bias, int B, int T, int C,
                                     const HiddenDropout& drop) {
  layernorm_forward_any(out, mean, rstd, res_in, weight, bias, B, T, C, branch, res_out, drop);
}

template <class DT>
static void layernorm_backward_any(float* dinp, float* dweight, float* dbias, const DT* dout,
                            const float* inp, const float* weight, const float* mean,
                            const float* rstd, int B, int T, int C, bf16* dinp_h,
                            float* dinp_colsum, const HiddenDropout& drop) {
  const int N = B * T;
  if (N == 0) return;
  // Rows of 16-byte groups when C % 4 == 0 (faster than the warp-pair kernel below), the
  // dropout applied in the same pass.
  if (C % 4 == 0 && C <= kVecMaxC)
    return layernorm_backward_rows<DT>(dinp, dinp_h, dweight, dbias, dinp_colsum, dout, inp,
                                       weight, mean, rstd, N, C, drop);
  if (drop.on) {
    // Other widths: the backward without the copy and the sums, then those of drop(dinp).
    layernorm_backward_any(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C, nullptr,
                           nullptr, HiddenDropout{});
    const size_t n = size_t(N) * C;
    if (dinp_h) {
      dropped_bf16_kernel<<<ceil_div(n, 256), 256, 0, stream()>>>(dinp_h, dinp, n, drop);
      GPT_CUDA_CHECK_LAUNCH();
    }
    if (dinp_colsum)
      column_sum_add<1>(ColumnTargets<1>{{dinp_colsum}}, ColumnOf{dinp, C, drop}, N, C);
    return;
  }
  // One pass that also sums the parameter gradients: other widths up to C = 1024.
  const auto fused = [&](auto f) {
    f(dinp, dinp_h, dweight, dbias, dinp_colsum, dout, inp, weight, mean, rstd, N, C);
  };
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
  if (dinp_colsum) column_sum_add<1>(ColumnTargets<1>{{dinp_colsum}}, ColumnOf{dinp, C, {}}, N, C);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C, bf16* dinp_h,
                        float* dinp_colsum, const HiddenDropout& drop) {
  layernorm_backward_any(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C, dinp_h,
                         dinp_colsum, drop);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const bf16* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C, bf16* dinp_h,
                        float* dinp_colsum, const HiddenDropout& drop) {
  layernorm_backward_any(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C, dinp_h,
                         dinp_colsum, drop);
}

}  // namespace gpt::cuda
