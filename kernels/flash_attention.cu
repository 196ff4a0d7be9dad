#include "kernels/flash_attention.cuh"

#include <cmath>
#include <cstdint>

namespace gpt::cuda {
namespace {

constexpr int kTile = 64;      // query rows and key columns per tile
constexpr int kThreads = 128;  // 4 warps, 16 rows each
constexpr int kLDT = kTile + 8;  // row length of transposed tiles [HSP][kLDT] (bank padding)

// c += a · b on one m16n8k16 tile: bf16 operands, fp32 accumulators.
//   a (16×16, row-major): a[0] (row g, k 2t..2t+1), a[1] (row g+8), a[2] (row g, k +8), a[3]
//   b (16×8): b0 (k 2t..2t+1, col g), b1 (k +8);  c: c0,c1 (row g, col 2t..), c2,c3 (row g+8)
// with g = lane/4, t = lane%4.
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ uint32_t ld32(const bf16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// Four consecutive elements of a head slice as floats (fp32 or bf16 source).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 load4(const bf16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}

// Rows [row0, row0 + 64) of one head's [T, hs] slice (element (r, d) at src[r·ld + d], bf16)
// into shared memory as bf16: row-major rowm [64][HSP+8] and/or transposed trans [HSP][kLDT].
// Zeros for r >= T and d >= hs. hs and ld are multiples of 4 (8-byte loads).
template <int HSP, class Src>
__device__ __forceinline__ void load_tile(bf16* rowm, bf16* trans, const Src* src, size_t ld,
                                          int row0, int T, int hs) {
  constexpr int LD = HSP + 8, V4 = HSP / 4;
  for (int i = threadIdx.x; i < kTile * V4; i += kThreads) {
    const int r = i / V4, d = (i % V4) * 4;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row0 + r < T && d < hs) v = load4(src + size_t(row0 + r) * ld + d);
    if (rowm) {
      uint2 p;
      p.x = pack(v.x, v.y);
      p.y = pack(v.z, v.w);
      *reinterpret_cast<uint2*>(rowm + r * LD + d) = p;
    }
    if (trans) {
      trans[(d + 0) * kLDT + r] = __float2bfloat16_rn(v.x);
      trans[(d + 1) * kLDT + r] = __float2bfloat16_rn(v.y);
      trans[(d + 2) * kLDT + r] = __float2bfloat16_rn(v.z);
      trans[(d + 3) * kLDT + r] = __float2bfloat16_rn(v.w);
    }
  }
}

// A fragments of rows [r0, r0+16) of a row-major [.][HSP+8] tile, all HSP/16 k-steps.
template <int HSP>
__device__ __forceinline__ void load_afrag(uint32_t f[HSP / 16][4], const bf16* tile, int r0) {
  constexpr int LD = HSP + 8;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kk = 0; kk < HSP / 16; ++kk) {
    f[kk][0] = ld32(tile + (r0 + g) * LD + kk * 16 + 2 * t);
    f[kk][1] = ld32(tile + (r0 + g + 8) * LD + kk * 16 + 2 * t);
    f[kk][2] = ld32(tile + (r0 + g) * LD + kk * 16 + 2 * t + 8);
    f[kk][3] = ld32(tile + (r0 + g + 8) * LD + kk * 16 + 2 * t + 8);
  }
}

// acc[16 × 64] = A[16 × HSP] · tileᵀ, tile row-major [64][HSP+8] (rows are the output columns).
template <int HSP>
__device__ __forceinline__ void mma_abt(float acc[8][4], const uint32_t a[HSP / 16][4],
                                        const bf16* tile) {
  constexpr int LD = HSP + 8;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < HSP / 16; ++kk) {
      const bf16* p = tile + (nt * 8 + g) * LD + kk * 16 + 2 * t;
      mma(acc[nt], a[kk], ld32(p), ld32(p + 8));
    }
  }
}

// acc[16 × HSP] += P[16 × 64] · X[64 × HSP], P given as accumulator tiles (rounded to bf16 here),
// X given transposed in shared memory: trans [HSP][kLDT].
template <int HSP>
__device__ __forceinline__ void mma_pv(float acc[HSP / 8][4], const float p[8][4],
                                       const bf16* trans) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kk = 0; kk < kTile / 16; ++kk) {
    uint32_t a[4];
    a[0] = pack(p[2 * kk][0], p[2 * kk][1]);
    a[1] = pack(p[2 * kk][2], p[2 * kk][3]);
    a[2] = pack(p[2 * kk + 1][0], p[2 * kk + 1][1]);
    a[3] = pack(p[2 * kk + 1][2], p[2 * kk + 1][3]);
#pragma unroll
    for (int dt = 0; dt < HSP / 8; ++dt) {
      const bf16* q = trans + (dt * 8 + g) * kLDT + kk * 16 + 2 * t;
      mma(acc[dt], a, ld32(q), ld32(q + 8));
    }
  }
}

template <int HSP>
__global__ void __launch_bounds__(kThreads) flash_forward_kernel(bf16* out, float* lse,
                                                                 const bf16* qkv, int T, int C,
                                                                 int NH, float scale_log2) {
  constexpr int LD = HSP + 8;
  __shared__ __align__(16) bf16 sQK[kTile * LD];  // Q, then each K tile
  __shared__ __align__(16) bf16 sVt[HSP * kLDT];
  const int qt = gridDim.x - 1 - blockIdx.x;  // longest rows first
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * hs;

  load_tile<HSP>(sQK, nullptr, base, ld, qt * kTile, T, hs);
  __syncthreads();
  uint32_t qf[HSP / 16][4];
  load_afrag<HSP>(qf, sQK, warp * 16);
  const int q0 = qt * kTile + warp * 16 + g;  // rows q0 (c0, c1) and q0 + 8 (c2, c3)

  float o[HSP / 8][4];
#pragma unroll
  for (int dt = 0; dt < HSP / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float s[8][4];
  for (int kt = 0; kt <= qt; ++kt) {
    __syncthreads();  // everyone is done with the previous tile (and with Q)
    load_tile<HSP>(sQK, nullptr, base + C, ld, kt * kTile, T, hs);
    load_tile<HSP>(nullptr, sVt, base + 2 * C, ld, kt * kTile, T, hs);
    __syncthreads();
    mma_abt<HSP>(s, qf, sQK);
    float mx[2] = {m[0], m[1]};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float v = s[nt][e] * scale_log2;
        if (kt == qt && kt * kTile + nt * 8 + 2 * t + (e & 1) > q0 + (e >> 1) * 8) v = -INFINITY;
        s[nt][e] = v;
        mx[e >> 1] = fmaxf(mx[e >> 1], v);
      }
    float corr[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
      corr[i] = exp2f(m[i] - mx[i]);  // first tile: exp2(-inf) = 0
      m[i] = mx[i];                   // finite: key 0 is visible to every row
      l[i] *= corr[i];
    }
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = exp2f(s[nt][e] - m[e >> 1]);
        s[nt][e] = p;
        l[e >> 1] += p;
      }
#pragma unroll
    for (int dt = 0; dt < HSP / 8; ++dt) {
      o[dt][0] *= corr[0];
      o[dt][1] *= corr[0];
      o[dt][2] *= corr[1];
      o[dt][3] *= corr[1];
    }
    mma_pv<HSP>(o, s, sVt);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = q0 + 8 * i;
    if (q >= T) continue;
    const float inv = 1.0f / l[i];
    bf16* dst = out + (size_t(b) * T + q) * C + size_t(h) * hs;
#pragma unroll
    for (int dt = 0; dt < HSP / 8; ++dt) {
      const int d = dt * 8 + 2 * t;
      if (d < hs)
        *reinterpret_cast<uint32_t*>(dst + d) = pack(o[dt][2 * i] * inv, o[dt][2 * i + 1] * inv);
    }
    if (t == 0) lse[size_t(bh) * T + q] = m[i] + log2f(l[i]);
  }
}

// D[b,h,t] = sum_d dout[b,t,h·hs+d] · out[b,t,h·hs+d]; one warp per row, fixed order.
__global__ void flash_dot_kernel(float* D, const bf16* dout, const bf16* out, int B, int T,
                                 int C, int NH) {
  const size_t row = size_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32, hs = C / NH;
  if (row >= size_t(B) * NH * T) return;
  const int t = row % T, h = (row / T) % NH;
  const size_t b = row / (size_t(T) * NH);
  const size_t off = (b * T + t) * C + size_t(h) * hs;
  float s = 0.f;
  for (int d = lane; d < hs; d += 32)
    s += __bfloat162float(dout[off + d]) * __bfloat162float(out[off + d]);
  s = warp_sum(s);
  if (lane == 0) D[row] = s;
}

// dK, dV of one 64-key tile, over the query tiles qt >= kt.
template <int HSP>
__global__ void __launch_bounds__(kThreads) flash_backward_dkdv_kernel(
    bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse, const float* D, int T,
    int C, int NH, float scale_log2, float scale) {
  constexpr int LD = HSP + 8;
  __shared__ __align__(16) bf16 sQ[kTile * LD];
  __shared__ __align__(16) bf16 sQt[HSP * kLDT];
  __shared__ __align__(16) bf16 sO[kTile * LD];  // dO
  __shared__ __align__(16) bf16 sOt[HSP * kLDT];
  __shared__ float sL[kTile], sD[kTile];
  const int kt = blockIdx.x;  // the first key tiles see the most queries; they start first
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * hs;
  const bf16* dbase = dout + size_t(b) * T * C + size_t(h) * hs;
  const int nq = (T + kTile - 1) / kTile;

  load_tile<HSP>(sQ, nullptr, base + C, ld, kt * kTile, T, hs);
  load_tile<HSP>(sO, nullptr, base + 2 * C, ld, kt * kTile, T, hs);
  __syncthreads();
  uint32_t kf[HSP / 16][4], vf[HSP / 16][4];
  load_afrag<HSP>(kf, sQ, warp * 16);
  load_afrag<HSP>(vf, sO, warp * 16);
  const int k0 = kt * kTile + warp * 16 + g;  // keys k0 (c0, c1) and k0 + 8 (c2, c3)

  float dk[HSP / 8][4], dv[HSP / 8][4];
#pragma unroll
  for (int dt = 0; dt < HSP / 8; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[dt][e] = dv[dt][e] = 0.f;
  float p[8][4], dp[8][4];
  for (int qt = kt; qt < nq; ++qt) {
    __syncthreads();
    load_tile<HSP>(sQ, sQt, base, ld, qt * kTile, T, hs);
    load_tile<HSP>(sO, sOt, dbase, C, qt * kTile, T, hs);
    if (threadIdx.x < kTile) {
      const int q = qt * kTile + threadIdx.x;
      sL[threadIdx.x] = q < T ? lse[size_t(bh) * T + q] : 0.f;
      sD[threadIdx.x] = q < T ? D[size_t(bh) * T + q] : 0.f;
    }
    __syncthreads();
    mma_abt<HSP>(p, kf, sQ);   // Sᵀ [16 keys × 64 queries]
    mma_abt<HSP>(dp, vf, sO);  // dPᵀ = V · dOᵀ
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int ql = nt * 8 + 2 * t + (e & 1), q = qt * kTile + ql;
        const int key = k0 + (e >> 1) * 8;
        const float pv = (q < T && q >= key) ? exp2f(p[nt][e] * scale_log2 - sL[ql]) : 0.f;
        p[nt][e] = pv;
        dp[nt][e] = pv * (dp[nt][e] - sD[ql]);  // dSᵀ
      }
    mma_pv<HSP>(dv, p, sOt);   // dV += Pᵀ · dO
    mma_pv<HSP>(dk, dp, sQt);  // dK += dSᵀ · Q  (scaled at the end)
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int key = k0 + 8 * i;
    if (key >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + key) * ld + size_t(h) * hs;
#pragma unroll
    for (int dt = 0; dt < HSP / 8; ++dt) {
      const int d = dt * 8 + 2 * t;
      if (d < hs) {
        *reinterpret_cast<uint32_t*>(dst + C + d) =
            pack(dk[dt][2 * i] * scale, dk[dt][2 * i + 1] * scale);
        *reinterpret_cast<uint32_t*>(dst + 2 * C + d) = pack(dv[dt][2 * i], dv[dt][2 * i + 1]);
      }
    }
  }
}

// dQ of one 64-query tile, over the key tiles kt <= qt.
template <int HSP>
__global__ void __launch_bounds__(kThreads) flash_backward_dq_kernel(
    bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse, const float* D, int T,
    int C, int NH, float scale_log2, float scale) {
  constexpr int LD = HSP + 8;
  __shared__ __align__(16) bf16 sK[kTile * LD];
  __shared__ __align__(16) bf16 sKt[HSP * kLDT];
  __shared__ __align__(16) bf16 sV[kTile * LD];
  const int qt = gridDim.x - 1 - blockIdx.x;
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * hs;
  const bf16* dbase = dout + size_t(b) * T * C + size_t(h) * hs;

  load_tile<HSP>(sK, nullptr, base, ld, qt * kTile, T, hs);
  load_tile<HSP>(sV, nullptr, dbase, C, qt * kTile, T, hs);
  __syncthreads();
  uint32_t qf[HSP / 16][4], of[HSP / 16][4];
  load_afrag<HSP>(qf, sK, warp * 16);
  load_afrag<HSP>(of, sV, warp * 16);
  const int q0 = qt * kTile + warp * 16 + g;
  float rl[2], rd[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = q0 + 8 * i;
    rl[i] = q < T ? lse[size_t(bh) * T + q] : 0.f;
    rd[i] = q < T ? D[size_t(bh) * T + q] : 0.f;
  }
  float dq[HSP / 8][4];
#pragma unroll
  for (int dt = 0; dt < HSP / 8; ++dt) dq[dt][0] = dq[dt][1] = dq[dt][2] = dq[dt][3] = 0.f;
  float p[8][4], dp[8][4];
  for (int kt = 0; kt <= qt; ++kt) {
    __syncthreads();
    load_tile<HSP>(sK, sKt, base + C, ld, kt * kTile, T, hs);
    load_tile<HSP>(sV, nullptr, base + 2 * C, ld, kt * kTile, T, hs);
    __syncthreads();
    mma_abt<HSP>(p, qf, sK);   // S [16 queries × 64 keys]
    mma_abt<HSP>(dp, of, sV);  // dP = dO · Vᵀ
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = kt * kTile + nt * 8 + 2 * t + (e & 1), q = q0 + (e >> 1) * 8;
        const float pv = key <= q ? exp2f(p[nt][e] * scale_log2 - rl[e >> 1]) : 0.f;
        dp[nt][e] = pv * (dp[nt][e] - rd[e >> 1]);  // dS
      }
    mma_pv<HSP>(dq, dp, sKt);  // dQ += dS · K
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = q0 + 8 * i;
    if (q >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + q) * ld + size_t(h) * hs;
#pragma unroll
    for (int dt = 0; dt < HSP / 8; ++dt) {
      const int d = dt * 8 + 2 * t;
      if (d < hs)
        *reinterpret_cast<uint32_t*>(dst + d) = pack(dq[dt][2 * i] * scale, dq[dt][2 * i + 1] * scale);
    }
  }
}

int padded_head(int hs) { return hs <= 16 ? 16 : hs <= 32 ? 32 : 64; }

template <int HSP>
void forward_hsp(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH, float sl2) {
  const dim3 grid(ceil_div(T, kTile), B * NH);
  flash_forward_kernel<HSP><<<grid, kThreads, 0, stream()>>>(out, lse, qkv, T, C, NH, sl2);
  GPT_CUDA_CHECK_LAUNCH();
}

template <int HSP>
void backward_hsp(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse,
                  const float* D, int B, int T, int C, int NH, float sl2, float scale) {
  const dim3 grid(ceil_div(T, kTile), B * NH);
  flash_backward_dkdv_kernel<HSP>
      <<<grid, kThreads, 0, stream()>>>(dqkv, dout, qkv, lse, D, T, C, NH, sl2, scale);
  GPT_CUDA_CHECK_LAUNCH();
  flash_backward_dq_kernel<HSP>
      <<<grid, kThreads, 0, stream()>>>(dqkv, dout, qkv, lse, D, T, C, NH, sl2, scale);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool flash_attention_supported(int C, int NH) {
  if (NH <= 0 || C % NH != 0) return false;
  const int hs = C / NH;
  return hs % 4 == 0 && hs <= 64;
}

void flash_attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH) {
  if (size_t(B) * T * C == 0) return;
  const int hs = C / NH;
  const float sl2 = float(1.4426950408889634 / std::sqrt(double(hs)));
  switch (padded_head(hs)) {
    case 16: forward_hsp<16>(out, lse, qkv, B, T, C, NH, sl2); break;
    case 32: forward_hsp<32>(out, lse, qkv, B, T, C, NH, sl2); break;
    default: forward_hsp<64>(out, lse, qkv, B, T, C, NH, sl2); break;
  }
}

void flash_attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out,
                              const float* lse, int B, int T, int C, int NH) {
  if (size_t(B) * T * C == 0) return;
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(double(hs));
  const float sl2 = float(1.4426950408889634 * scale);
  const size_t rows = size_t(B) * NH * T;
  Scratch<float> D(rows);
  flash_dot_kernel<<<ceil_div(rows, 8), 256, 0, stream()>>>(D, dout, out, B, T, C, NH);
  GPT_CUDA_CHECK_LAUNCH();
  switch (padded_head(hs)) {
    case 16: backward_hsp<16>(dqkv, dout, qkv, lse, D, B, T, C, NH, sl2, float(scale)); break;
    case 32: backward_hsp<32>(dqkv, dout, qkv, lse, D, B, T, C, NH, sl2, float(scale)); break;
    default: backward_hsp<64>(dqkv, dout, qkv, lse, D, B, T, C, NH, sl2, float(scale)); break;
  }
}

}  // namespace gpt::cuda
