// The mma.sync flash attention kernels of flash_attention.cuh as templates over the element type
// E of q, k, v, out and their gradients (bf16 for --bf16, fp16 for --fp16: the same kernels with
// the m16n8k16 product of that type, fp32 accumulation either way), the padded head size and the
// tile shape, with their launches and the dispatch from run-time shapes to instantiations.
// Included by flash_attention.cu (bf16) and flash_attention_fp16.cu (fp16), one element type
// each so that the two compile apart, and by scripts/bench/flash_attention_bench.cu.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/cuda_common.cuh"
#include "kernels/flash_dropout.cuh"
#include "kernels/flash_tiles.h"
#include "kernels/mma_fragments.cuh"
#include "kernels/smem_ptx.cuh"

namespace gpt::cuda::flash {

// Rows per streamed tile of head sizes up to 64: keys (forward, dQ), queries (dK/dV). The wide
// head sizes take theirs from their tile shape (flash_tiles.h).
constexpr int kBK = 64;

// ---- PTX wrappers (sm_80+; cp.async and ldmatrix in kernels/smem_ptx.cuh) ----

// c += a · b on one m16n8k16 tile: E operands (bf16 or fp16), fp32 accumulators.
//   a (16×16, row-major): a[0] (row g, k 2t..2t+1), a[1] (row g+8), a[2] (row g, k +8), a[3]
//   b (16×8): b0 (k 2t..2t+1, col g), b1 (k +8);  c: c0,c1 (row g, col 2t..), c2,c3 (row g+8)
// with g = lane/4, t = lane%4.
template <class E>
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<E, __half>)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Shared tiles are row-major [rows][HSP + 8] 16-bit elements: rows 16-byte aligned, and the 8 rows
// an ldmatrix phase reads fall in distinct banks (row stride ≡ 16 bytes mod 128).
template <int HSP>
constexpr int lds() {
  return HSP + 8;
}

// Rows [row0, row0 + R) of one head's [T, hs] slice (element (r, d) at src[r·ld + d]) into the
// shared tile dst [R][HSP + 8] with cp.async; zeros for rows >= T and columns >= hs.
// V16: 16-byte copies (hs, ld and the base 8-element aligned), else 8-byte copies (hs % 4 == 0).
// Thread i copies the chunk (i / CPR, i % CPR) and every NT / CPR rows after it (CPR = HSP / copy
// width chunks per row; when CPR does not divide NT, chunk i, i + NT, ...).
template <int R, int HSP, int NT, bool V16, class E>
__device__ __forceinline__ void load_tile(E* dst, const E* src, size_t ld, int row0, int T,
                                          int hs) {
  constexpr int LDS = lds<HSP>(), CW = V16 ? 8 : 4, CPR = HSP / CW;
  if constexpr (NT % CPR != 0) {
    // Rows that do not divide the threads (head sizes 80, 96): chunk i is (i / CPR, i % CPR).
    for (int i = threadIdx.x; i < R * CPR; i += NT) {
      const int r = i / CPR, d = (i % CPR) * CW;
      const bool ok = d < hs && row0 + r < T;
      const E* p = ok ? src + size_t(row0 + r) * ld + d : src;
      if constexpr (V16)
        cp_async16(smem_addr(dst + r * LDS + d), p, ok);
      else
        cp_async8(smem_addr(dst + r * LDS + d), p, ok);
    }
  } else {
    constexpr int RSTEP = NT / CPR;
    const int r = threadIdx.x / CPR, d = (threadIdx.x % CPR) * CW;
    const E* p = src + size_t(row0 + r) * ld + d;
    uint32_t s = smem_addr(dst + r * LDS + d);
    const int rows_left = T - row0 - r;  // rows r + k·RSTEP < T - row0 are inside
    const bool dok = d < hs;
#pragma unroll
    for (int k = 0; k * RSTEP < R; ++k) {
      if (R % RSTEP == 0 || r + k * RSTEP < R) {
        const bool ok = dok && k * RSTEP < rows_left;
        if constexpr (V16)
          cp_async16(s, ok ? p : src, ok);
        else
          cp_async8(s, ok ? p : src, ok);
      }
      p += RSTEP * ld;
      s += RSTEP * LDS * sizeof(E);
    }
  }
}

// ldmatrix lane offsets (row, column) into a row-major tile:
//   A operand, 16 rows × 16 k:                     (l%16, (l/16)·8)         -> a[0..3]
//   B operand from [n][k] rows, 2 n-tiles × k16:  (l%8 + (l/16)·8, (l/8)%2·8)
//       -> b0, b1 of n-tile 0, then b0, b1 of n-tile 1
//   B operand from [k][n] rows (.trans), k16 × 2 n-tiles:  (l%8 + (l/8)%2·8, (l/16)·8) -> same
struct Lanes {
  int a_row, a_col, b_row, b_col, t_row, t_col;
  __device__ Lanes(int lane)
      : a_row(lane % 16),
        a_col((lane / 16) * 8),
        b_row(lane % 8 + (lane / 16) * 8),
        b_col(((lane / 8) % 2) * 8),
        t_row(lane % 8 + ((lane / 8) % 2) * 8),
        t_col((lane / 16) * 8) {}
};

// The K/V double buffer of the forward and dQ kernels: issues the copy of key tile kt + 1 (BK
// rows) into the buffer not in use, then waits until tile kt (issued one step earlier) has landed.
template <int HSP, int NT, int BK, bool V16, class E>
__device__ __forceinline__ void prefetch_kv(E* sK, E* sV, int kt, int nkt, const E* base, int C,
                                            size_t ld, int T, int hs) {
  constexpr int LDS = lds<HSP>();
  if (kt + 1 < nkt) {
    const int next = (kt + 1) * BK, other = ((kt & 1) ^ 1) * BK * LDS;
    load_tile<BK, HSP, NT, V16>(sK + other, base + C, ld, next, T, hs);
    load_tile<BK, HSP, NT, V16>(sV + other, base + 2 * C, ld, next, T, hs);
    cp_async_commit();
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
}

// acc[16 × 8·NC] (+)= A[16 × HSP] · Bᵀ, B = rows [0, 8·NC) of the row-major tile at `tile`.
template <class E, int HSP, int NC>
__device__ __forceinline__ void mma_abt(float acc[NC][4], const uint32_t a[HSP / 16][4],
                                        const E* tile, const Lanes& ln) {
  constexpr int LDS = lds<HSP>();
#pragma unroll
  for (int np = 0; np < NC / 2; ++np)
#pragma unroll
    for (int kk = 0; kk < HSP / 16; ++kk) {
      uint32_t b[4];
      ldsm_x4(b, smem_addr(tile + (np * 16 + ln.b_row) * LDS + kk * 16 + ln.b_col));
      mma<E>(acc[2 * np], a[kk], b[0], b[1]);
      mma<E>(acc[2 * np + 1], a[kk], b[2], b[3]);
    }
}

// acc[16 × HSP] += P[16 × 16·KS] · X, P as accumulator tiles p[2·KS][4] (rounded to E here),
// X = rows [0, 16·KS) of the row-major tile at `tile` ([k][HSP], read with ldmatrix.trans).
template <class E, int HSP, int KS>
__device__ __forceinline__ void mma_pv(float acc[HSP / 8][4], const float p[2 * KS][4],
                                       const E* tile, const Lanes& ln) {
  constexpr int LDS = lds<HSP>();
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) {
    uint32_t a[4];
    acc_to_a<E>(a, p[2 * kk], p[2 * kk + 1]);
#pragma unroll
    for (int dp = 0; dp < HSP / 16; ++dp) {
      uint32_t b[4];
      ldsm_x4_t(b, smem_addr(tile + (kk * 16 + ln.t_row) * LDS + dp * 16 + ln.t_col));
      mma<E>(acc[2 * dp], a, b[0], b[1]);
      mma<E>(acc[2 * dp + 1], a, b[2], b[3]);
    }
  }
}

// ---- Forward: one block per BM = 16·MT·NW query rows (MT m-tiles per warp, Q fragments in
// registers), streaming BK-key K and V tiles through a cp.async double buffer.
template <class E, int HSP, int MT, int NW, int BK, int MINB, bool V16, bool DROP>
__global__ void __launch_bounds__(NW * 32, MINB)
    flash_forward_kernel(E* out, float* lse, const E* qkv, int T, int C, int NH, float sl2,
                         Dropout dr) {
  constexpr int NT = NW * 32, BM = 16 * MT * NW, LDS = lds<HSP>(), KS = HSP / 16, DT = HSP / 8;
  constexpr int NB = BK / 8;  // 8-key n-tiles per K/V tile
  static_assert(BK % (16 * MT) == 0, "a K/V tile starts at or before a warp's first row");
  extern __shared__ __align__(16) unsigned char smem[];
  E* sQ = reinterpret_cast<E*>(smem);                          // [BM][LDS]
  E* sK = sQ + BM * LDS;                                       // [2][BK][LDS]
  E* sV = sK + 2 * BK * LDS;                                   // [2][BK][LDS]
  const int bh = blockIdx.x, qb = gridDim.y - 1 - blockIdx.y;  // longest rows first
  const int b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const Lanes ln(lane);
  const size_t ld = 3 * size_t(C);
  const E* base = qkv + size_t(b) * T * ld + size_t(h) * hs;
  const int q_first = qb * BM, wq0 = q_first + warp * 16 * MT;
  const int nkt = (min(q_first + BM, T) - 1) / BK + 1;

  load_tile<BM, HSP, NT, V16>(sQ, base, ld, q_first, T, hs);
  load_tile<BK, HSP, NT, V16>(sK, base + C, ld, 0, T, hs);
  load_tile<BK, HSP, NT, V16>(sV, base + 2 * C, ld, 0, T, hs);
  cp_async_commit();

  uint32_t qf[MT][KS][4];
  float o[MT][DT][4];
  float m[MT][2];  // running max of the raw scores
  float l[MT][2];  // partial row sums (this lane's columns)
  // attention dropout: the groups of rows g (and g + 8) of each m-tile, under the key read once
  [[maybe_unused]] AttentionRow drop_row[MT];
  [[maybe_unused]] const uint64_t drop_key = DROP ? dr.key.get() : 0;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    if constexpr (DROP)
      drop_row[mt] = attention_row(drop_key, dr.heads.model_bh(bh, NH), wq0 + mt * 16 + g);
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.f;
  }

  for (int kt = 0; kt < nkt; ++kt) {
    const int buf = kt & 1;
    prefetch_kv<HSP, NT, BK, V16>(sK, sV, kt, nkt, base, C, ld, T, hs);
    if (kt == 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < KS; ++kk)
          ldsm_x4(qf[mt][kk],
                  smem_addr(sQ + (warp * 16 * MT + mt * 16 + ln.a_row) * LDS + kk * 16 + ln.a_col));
    }
    const int k0 = kt * BK;
    // Keys k0.. are visible to some row of this warp (then every row sees key k0: k0 is a
    // multiple of BK, which is a multiple of 16·MT, and wq0 of 16·MT, so k0 <= wq0).
    if (k0 < wq0 + 16 * MT) {
      const E* cK = sK + buf * BK * LDS;
      const E* cV = sV + buf * BK * LDS;
      float s[MT][NB][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NB; ++nt)
          s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
      for (int np = 0; np < NB / 2; ++np)
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
          uint32_t bb[4];
          ldsm_x4(bb, smem_addr(cK + (np * 16 + ln.b_row) * LDS + kk * 16 + ln.b_col));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma<E>(s[mt][2 * np], qf[mt][kk], bb[0], bb[1]);
            mma<E>(s[mt][2 * np + 1], qf[mt][kk], bb[2], bb[3]);
          }
        }
      if (k0 + BK - 1 > wq0) {  // the diagonal tile: keys after the query are masked
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NB; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (k0 + nt * 8 + 2 * t + (e & 1) > wq0 + mt * 16 + g + (e >> 1) * 8)
                s[mt][nt][e] = -INFINITY;
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        float mx[2] = {m[mt][0], m[mt][1]};
#pragma unroll
        for (int nt = 0; nt < NB; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) mx[e >> 1] = fmaxf(mx[e >> 1], s[mt][nt][e]);
        float corr[2], ms[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
          mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
          corr[i] = ex2((m[mt][i] - mx[i]) * sl2);  // first tile: ex2(-inf) = 0
          m[mt][i] = mx[i];                         // finite: key k0 is visible to every row
          ms[i] = mx[i] * sl2;
          l[mt][i] *= corr[i];
        }
        [[maybe_unused]] uint64_t w[NB / 2][2];
        if constexpr (DROP) group_words<NB>(w, drop_row[mt], k0 + 2 * t);
#pragma unroll
        for (int nt = 0; nt < NB; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float p = ex2(fmaf(s[mt][nt][e], sl2, -ms[e >> 1]));
            s[mt][nt][e] = p;
            l[mt][e >> 1] += p;  // the softmax sum: before dropout
            if constexpr (DROP)  // P·V with the dropped P (rkeep applied with 1/l at the end)
              if (!keep_bit<false>(dr, w, nt, e)) s[mt][nt][e] = 0.f;
          }
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          o[mt][dt][0] *= corr[0];
          o[mt][dt][1] *= corr[0];
          o[mt][dt][2] *= corr[1];
          o[mt][dt][3] *= corr[1];
        }
      }
      // O += P · V (V tile read transposed by ldmatrix.trans; fragments shared by the m-tiles)
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        uint32_t pa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) acc_to_a<E>(pa[mt], s[mt][2 * kk], s[mt][2 * kk + 1]);
#pragma unroll
        for (int dp = 0; dp < HSP / 16; ++dp) {
          uint32_t bb[4];
          ldsm_x4_t(bb, smem_addr(cV + (kk * 16 + ln.t_row) * LDS + dp * 16 + ln.t_col));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma<E>(o[mt][2 * dp], pa[mt], bb[0], bb[1]);
            mma<E>(o[mt][2 * dp + 1], pa[mt], bb[2], bb[3]);
          }
        }
      }
    }
    __syncthreads();  // everyone is done with buffer buf before it is refilled
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float li = l[mt][i];
      li += __shfl_xor_sync(0xffffffffu, li, 1);
      li += __shfl_xor_sync(0xffffffffu, li, 2);
      const int q = wq0 + mt * 16 + g + 8 * i;
      if (q >= T) continue;
      const float inv = DROP ? dr.rkeep / li : 1.0f / li;
      E* dst = out + (size_t(b) * T + q) * C + size_t(h) * hs;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        const int d = dt * 8 + 2 * t;
        if (d < hs)
          *reinterpret_cast<uint32_t*>(dst + d) =
              pack<E>(o[mt][dt][2 * i] * inv, o[mt][dt][2 * i + 1] * inv);
      }
      if (t == 0) lse[size_t(bh) * T + q] = m[mt][i] * sl2 + log2f(li);
    }
}

// ---- Backward, dQ: one block per 16·NW query rows (one m-tile per warp; Q and dO fragments in
// registers), streaming BK-key K and V tiles. Also computes D = rowsum(dO ∘ O) of its rows from
// shared memory and writes it for the dK/dV kernel (which runs after it).
template <class E, int HSP, int NW, int BK, int KC, int MINB, bool V16, bool DROP>
__global__ void __launch_bounds__(NW * 32, MINB)
    flash_backward_dq_kernel(E* dqkv, float* Dg, const E* dout, const E* qkv, const E* out,
                             const float* lse, int T, int C, int NH, float sl2, float scale,
                             Dropout dr) {
  constexpr int NT = NW * 32, BM = 16 * NW, LDS = lds<HSP>(), KS = HSP / 16, DT = HSP / 8;
  constexpr int NC = KC / 8;
  static_assert(BK % KC == 0 && KC % 16 == 0);
  extern __shared__ __align__(16) unsigned char smem[];
  E* sQ = reinterpret_cast<E*>(smem);                          // [BM][LDS]
  E* sdO = sQ + BM * LDS;                                      // [BM][LDS]
  E* sO = sdO + BM * LDS;                                      // [BM][LDS]
  E* sK = sO + BM * LDS;                                       // [2][BK][LDS]
  E* sV = sK + 2 * BK * LDS;                                   // [2][BK][LDS]
  const int bh = blockIdx.x, qb = gridDim.y - 1 - blockIdx.y;  // longest rows first
  const int b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const Lanes ln(lane);
  const size_t ld = 3 * size_t(C);
  const E* base = qkv + size_t(b) * T * ld + size_t(h) * hs;
  const size_t ooff = size_t(b) * T * C + size_t(h) * hs;
  const int q_first = qb * BM, wq0 = q_first + warp * 16;
  const int nkt = (min(q_first + BM, T) - 1) / BK + 1;

  load_tile<BM, HSP, NT, V16>(sQ, base, ld, q_first, T, hs);
  load_tile<BM, HSP, NT, V16>(sdO, dout + ooff, C, q_first, T, hs);
  load_tile<BM, HSP, NT, V16>(sO, out + ooff, C, q_first, T, hs);
  load_tile<BK, HSP, NT, V16>(sK, base + C, ld, 0, T, hs);
  load_tile<BK, HSP, NT, V16>(sV, base + 2 * C, ld, 0, T, hs);
  cp_async_commit();

  float rl[2], rd[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = wq0 + g + 8 * i;
    rl[i] = q < T ? lse[size_t(bh) * T + q] : 0.f;
  }
  // attention dropout: the groups of rows g (and g + 8)
  [[maybe_unused]] const AttentionRow drop_row =
      DROP ? attention_row(dr.key.get(), dr.heads.model_bh(bh, NH), wq0 + g) : AttentionRow{};
  uint32_t qf[KS][4], of[KS][4];
  float dq[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt) dq[dt][0] = dq[dt][1] = dq[dt][2] = dq[dt][3] = 0.f;

  for (int kt = 0; kt < nkt; ++kt) {
    const int buf = kt & 1;
    prefetch_kv<HSP, NT, BK, V16>(sK, sV, kt, nkt, base, C, ld, T, hs);
    if (kt == 0) {
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        ldsm_x4(qf[kk], smem_addr(sQ + (warp * 16 + ln.a_row) * LDS + kk * 16 + ln.a_col));
        ldsm_x4(of[kk], smem_addr(sdO + (warp * 16 + ln.a_row) * LDS + kk * 16 + ln.a_col));
      }
      // D of row wq0 + lane/2: each lane of a pair sums half the (zero-padded) row, in order.
      const int r = warp * 16 + lane / 2, c0 = (lane % 2) * (HSP / 2);
      float acc = 0.f;
#pragma unroll
      for (int c = 0; c < HSP / 2; c += 8) {
        acc = fma_dot8<E>(*reinterpret_cast<const uint4*>(sdO + r * LDS + c0 + c),
                          *reinterpret_cast<const uint4*>(sO + r * LDS + c0 + c), acc);
      }
      acc += __shfl_xor_sync(0xffffffffu, acc, 1);  // commutative: both lanes hold the same bits
      if (lane % 2 == 0 && wq0 + lane / 2 < T) Dg[size_t(bh) * T + wq0 + lane / 2] = acc;
      rd[0] = __shfl_sync(0xffffffffu, acc, 2 * g);
      rd[1] = __shfl_sync(0xffffffffu, acc, 2 * (g + 8));
    }
    const int k0 = kt * BK;
    if (k0 < wq0 + 16) {
      const E* cK = sK + buf * BK * LDS;
      const E* cV = sV + buf * BK * LDS;
#pragma unroll 1
      for (int c = 0; c < BK; c += KC) {
        const int kc0 = k0 + c;
        if (kc0 >= wq0 + 16) break;  // every key of the chunk is after every row of the warp
        float s[NC][4], dp[NC][4];
#pragma unroll
        for (int nt = 0; nt < NC; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.f;
        mma_abt<E, HSP, NC>(s, qf, cK + c * LDS, ln);   // S = Q · Kᵀ
        mma_abt<E, HSP, NC>(dp, of, cV + c * LDS, ln);  // dP = dO · Vᵀ
        const bool diag = kc0 + KC - 1 > wq0;
        [[maybe_unused]] uint64_t w[NC / 2][2];
        if constexpr (DROP) group_words<NC>(w, drop_row, kc0 + 2 * t);
#pragma unroll
        for (int nt = 0; nt < NC; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float pv = ex2(fmaf(s[nt][e], sl2, -rl[e >> 1]));
            if (diag && kc0 + nt * 8 + 2 * t + (e & 1) > wq0 + g + (e >> 1) * 8) pv = 0.f;
            if constexpr (DROP)  // dP through the mask: dS = P ∘ (Z ∘ dP - D)
              dp[nt][e] = keep_bit<false>(dr, w, nt, e) ? dp[nt][e] * dr.rkeep : 0.f;
            dp[nt][e] = pv * (dp[nt][e] - rd[e >> 1]);  // dS
          }
        mma_pv<E, HSP, KC / 16>(dq, dp, cK + c * LDS, ln);  // dQ += dS · K
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = wq0 + g + 8 * i;
    if (q >= T) continue;
    E* dst = dqkv + (size_t(b) * T + q) * ld + size_t(h) * hs;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      const int d = dt * 8 + 2 * t;
      if (d < hs)
        *reinterpret_cast<uint32_t*>(dst + d) =
            pack<E>(dq[dt][2 * i] * scale, dq[dt][2 * i + 1] * scale);
    }
  }
}

// ---- Backward, dK and dV: one block per 16·NW keys (one m-tile of keys per warp; K and V
// fragments in registers), streaming BK-query Q and dO tiles (and their lse, D) through a
// cp.async double buffer; the products are formed transposed (Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ), so
// Pᵀ and dSᵀ stay in registers as the A operands of dV += Pᵀ·dO and dK += dSᵀ·Q.
template <class E, int HSP, int NW, int BK, int QC, int MINB, bool V16, bool DROP>
__global__ void __launch_bounds__(NW * 32, MINB)
    flash_backward_dkdv_kernel(E* dqkv, const E* dout, const E* qkv, const float* lse,
                               const float* Dg, int T, int C, int NH, float sl2, float scale,
                               Dropout dr) {
  constexpr int NT = NW * 32, BN = 16 * NW, LDS = lds<HSP>(), KS = HSP / 16, DT = HSP / 8;
  constexpr int NC = QC / 8;
  static_assert(BK % QC == 0 && QC % 16 == 0);
  extern __shared__ __align__(16) unsigned char smem[];
  E* sK = reinterpret_cast<E*>(smem);                        // [BN][LDS]
  E* sV = sK + BN * LDS;                                     // [BN][LDS]
  E* sQ = sV + BN * LDS;                                     // [2][BK][LDS]
  E* sdO = sQ + 2 * BK * LDS;                                // [2][BK][LDS]
  float* sL = reinterpret_cast<float*>(sdO + 2 * BK * LDS);  // [2][BK]
  float* sD = sL + 2 * BK;                                   // [2][BK]
  const int bh = blockIdx.x, kb = blockIdx.y;  // the first key blocks see the most queries
  const int b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const Lanes ln(lane);
  const size_t ld = 3 * size_t(C);
  const E* base = qkv + size_t(b) * T * ld + size_t(h) * hs;
  const E* dbase = dout + size_t(b) * T * C + size_t(h) * hs;
  const float* lrow = lse + size_t(bh) * T;
  const float* drow = Dg + size_t(bh) * T;
  const int key0 = kb * BN, wk0 = key0 + warp * 16;
  const int qt0 = key0 / BK, nq = (T + BK - 1) / BK;

  auto load_q = [&](int qt, int buf) {
    load_tile<BK, HSP, NT, V16>(sQ + buf * BK * LDS, base, ld, qt * BK, T, hs);
    load_tile<BK, HSP, NT, V16>(sdO + buf * BK * LDS, dbase, C, qt * BK, T, hs);
    for (int i = threadIdx.x; i < 2 * BK; i += NT) {
      const int j = i % BK, q = qt * BK + j;
      const bool ok = q < T;
      if (i < BK)
        cp_async4(smem_addr(sL + buf * BK + j), ok ? lrow + q : lrow, ok);
      else
        cp_async4(smem_addr(sD + buf * BK + j), ok ? drow + q : drow, ok);
    }
  };
  load_tile<BN, HSP, NT, V16>(sK, base + C, ld, key0, T, hs);
  load_tile<BN, HSP, NT, V16>(sV, base + 2 * C, ld, key0, T, hs);
  load_q(qt0, 0);
  cp_async_commit();

  // attention dropout: the groups of key columns g (and g + 8)
  [[maybe_unused]] const AttentionColumn drop_col =
      DROP ? attention_column(dr.key.get(), dr.heads.model_bh(bh, NH), wk0 + g) : AttentionColumn{};
  uint32_t kf[KS][4], vf[KS][4];
  float dk[DT][4], dv[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[dt][e] = dv[dt][e] = 0.f;

  for (int qt = qt0; qt < nq; ++qt) {
    const int buf = (qt - qt0) & 1;
    if (qt + 1 < nq) {
      load_q(qt + 1, buf ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (qt == qt0) {
#pragma unroll
      for (int kk = 0; kk < KS; ++kk) {
        ldsm_x4(kf[kk], smem_addr(sK + (warp * 16 + ln.a_row) * LDS + kk * 16 + ln.a_col));
        ldsm_x4(vf[kk], smem_addr(sV + (warp * 16 + ln.a_row) * LDS + kk * 16 + ln.a_col));
      }
    }
    const int q0 = qt * BK;
    if (q0 + BK - 1 >= wk0) {
      const E* cQ = sQ + buf * BK * LDS;
      const E* cdO = sdO + buf * BK * LDS;
      const float* cL = sL + buf * BK;
      const float* cD = sD + buf * BK;
#pragma unroll 1
      for (int c = 0; c < BK; c += QC) {
        const int qc0 = q0 + c;
        if (qc0 + QC - 1 < wk0) continue;  // every query of the chunk is before every key
        float s[NC][4], dp[NC][4];
#pragma unroll
        for (int nt = 0; nt < NC; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.f;
        mma_abt<E, HSP, NC>(s, kf, cQ + c * LDS, ln);    // Sᵀ = K · Qᵀ
        mma_abt<E, HSP, NC>(dp, vf, cdO + c * LDS, ln);  // dPᵀ = V · dOᵀ
        const bool msk = qc0 < wk0 + 15 || qc0 + QC > T;
        [[maybe_unused]] uint64_t w[NC / 2][2];
        if constexpr (DROP) group_words<NC>(w, drop_col, qc0 + 2 * t);
#pragma unroll
        for (int nt = 0; nt < NC; ++nt) {
          const int ql = c + nt * 8 + 2 * t;
          const float2 L = *reinterpret_cast<const float2*>(cL + ql);
          const float2 D = *reinterpret_cast<const float2*>(cD + ql);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int q = q0 + ql + (e & 1), key = wk0 + g + (e >> 1) * 8;
            float pv = ex2(fmaf(s[nt][e], sl2, -((e & 1) ? L.y : L.x)));
            if (msk && (q < key || q >= T)) pv = 0.f;
            if constexpr (DROP) {  // dV from the dropped Pᵀ; dSᵀ = Pᵀ ∘ (Z ∘ dPᵀ - D)
              const bool kp = keep_bit<true>(dr, w, nt, e);
              s[nt][e] = kp ? pv * dr.rkeep : 0.f;
              dp[nt][e] = pv * ((kp ? dp[nt][e] * dr.rkeep : 0.f) - ((e & 1) ? D.y : D.x));
            } else {
              s[nt][e] = pv;                                         // Pᵀ
              dp[nt][e] = pv * (dp[nt][e] - ((e & 1) ? D.y : D.x));  // dSᵀ
            }
          }
        }
        mma_pv<E, HSP, QC / 16>(dv, s, cdO + c * LDS, ln);  // dV += Pᵀ · dO
        mma_pv<E, HSP, QC / 16>(dk, dp, cQ + c * LDS, ln);  // dK += dSᵀ · Q (scaled at the end)
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int key = wk0 + g + 8 * i;
    if (key >= T) continue;
    E* dst = dqkv + (size_t(b) * T + key) * ld + size_t(h) * hs;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      const int d = dt * 8 + 2 * t;
      if (d < hs) {
        *reinterpret_cast<uint32_t*>(dst + C + d) =
            pack<E>(dk[dt][2 * i] * scale, dk[dt][2 * i + 1] * scale);
        *reinterpret_cast<uint32_t*>(dst + 2 * C + d) = pack<E>(dv[dt][2 * i], dv[dt][2 * i + 1]);
      }
    }
  }
}

inline int padded_head(int hs) {
  return hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : hs <= 80 ? 80 : hs <= 96 ? 96 : 128;
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Raises the kernel's dynamic shared memory limit to `bytes`; a tile shape that needs more than
// the device offers (the largest wide-head shapes on cards with less than Hopper's 227 KB) is
// refused with a message naming it, not left to a failed launch.
// The limit is queried once per thread and device (at the first launch, an eager one, not inside
// a graph capture).
inline int smem_limit() {
  thread_local int cached_device = -1, cached_limit = 0;
  int device = 0;
  GPT_CUDA_CHECK(cudaGetDevice(&device));
  if (device != cached_device) {
    GPT_CUDA_CHECK(
        cudaDeviceGetAttribute(&cached_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    cached_device = device;
  }
  return cached_limit;
}

template <class Kernel>
void set_smem(Kernel kernel, size_t bytes, const char* tiles) {
  const int limit = smem_limit();
  if (bytes > size_t(limit))
    throw std::runtime_error(std::string("flash attention tiles ") + tiles + " need " +
                             std::to_string(bytes / 1024) + " KB of shared memory per block, " +
                             "this device offers " + std::to_string(limit / 1024) +
                             " KB (choose other tiles)");
  GPT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
}

// Launches. Tile configurations: forward MT m-tiles of 16 rows per warp and NW warps, BK keys per
// K/V tile; dQ NW warps of 16 rows, BK keys per tile, KC keys per register chunk; dK/dV NW warps
// of 16 keys, BK queries per tile, QC queries per register chunk; MINB = __launch_bounds__ min
// blocks. `tiles` names the shape in errors.
template <class E, int HSP, bool V16, int MT, int NW, int BK, int MINB, bool DROP = false>
void launch_forward(E* out, float* lse, const E* qkv, int B, int T, int C, int NH, float sl2,
                    Dropout dr = {}, const char* tiles = "") {
  constexpr int BM = 16 * MT * NW;
  const size_t smem = size_t(BM + 4 * BK) * lds<HSP>() * sizeof(E);
  auto kernel = flash_forward_kernel<E, HSP, MT, NW, BK, MINB, V16, DROP>;
  set_smem(kernel, smem, tiles);
  const dim3 grid(B * NH, ceil_div(T, BM));
  kernel<<<grid, NW * 32, smem, stream()>>>(out, lse, qkv, T, C, NH, sl2, dr);
  GPT_CUDA_CHECK_LAUNCH();
}

template <class E, int HSP, bool V16, int NW, int BK, int KC, int MINB, bool DROP = false>
void launch_backward_dq(E* dqkv, float* D, const E* dout, const E* qkv, const E* out,
                        const float* lse, int B, int T, int C, int NH, float sl2, float scale,
                        Dropout dr = {}, const char* tiles = "") {
  constexpr int BM = 16 * NW;
  const size_t smem = size_t(3 * BM + 4 * BK) * lds<HSP>() * sizeof(E);
  auto kernel = flash_backward_dq_kernel<E, HSP, NW, BK, KC, MINB, V16, DROP>;
  set_smem(kernel, smem, tiles);
  const dim3 grid(B * NH, ceil_div(T, BM));
  kernel<<<grid, NW * 32, smem, stream()>>>(dqkv, D, dout, qkv, out, lse, T, C, NH, sl2, scale, dr);
  GPT_CUDA_CHECK_LAUNCH();
}

template <class E, int HSP, bool V16, int NW, int BK, int QC, int MINB, bool DROP = false>
void launch_backward_dkdv(E* dqkv, const E* dout, const E* qkv, const float* lse, const float* D,
                          int B, int T, int C, int NH, float sl2, float scale, Dropout dr = {},
                          const char* tiles = "") {
  constexpr int BN = 16 * NW;
  const size_t smem = size_t(2 * BN + 4 * BK) * lds<HSP>() * sizeof(E) + 4 * BK * sizeof(float);
  auto kernel = flash_backward_dkdv_kernel<E, HSP, NW, BK, QC, MINB, V16, DROP>;
  set_smem(kernel, smem, tiles);
  const dim3 grid(B * NH, ceil_div(T, BN));
  kernel<<<grid, NW * 32, smem, stream()>>>(dqkv, dout, qkv, lse, D, T, C, NH, sl2, scale, dr);
  GPT_CUDA_CHECK_LAUNCH();
}

// Head sizes up to 64: the fastest of scripts/bench/flash_attention_bench.cu's sweep at head
// size 64, T 1024 (one configuration, not a --flash-tiles choice).
constexpr int kFwdTiles = 2, kFwdWarps = 4, kFwdMinBlocks = 2;     // 128 rows a block, 32 a warp
constexpr int kDqWarps = 4, kDqKeyChunk = 32, kDqMinBlocks = 3;    // 64 rows per block
constexpr int kKvWarps = 4, kKvQueryChunk = 16, kKvMinBlocks = 3;  // 64 keys per block

// Head sizes over 64 (80, 96, 128): tile shape V of kFlashTiles (flash_tiles.h) as the three
// kernels' template arguments. Fewer resident blocks than at 64 (the O accumulators of HSP/8
// tiles fill the registers; shared tiles of HSP + 8 columns): MINB 2 for 4-warp forward blocks,
// else 1 (8 warps at MINB 2 would cap a thread at 128 registers and spill).
template <int V>
struct WideTiles {
  static constexpr FlashTiles kShape = kFlashTiles[V];
  static constexpr int kWarps = kShape.warps, kKeys = kShape.keys;
  static constexpr int kFwdTiles = kShape.rows / (16 * kWarps);
  static constexpr int kFwdMinBlocks = kWarps >= 8 ? 1 : 2;
  static constexpr int kDqKeyChunk = kKeys < 32 ? kKeys : 32, kKvQueryChunk = 16;
  static_assert(kShape.rows == 16 * kFwdTiles * kWarps, "rows: a whole number of m-tiles a warp");
};

// Calls f.template operator()<V>() for the generic tile shape index v (flash_generic_tiles).
template <class F, int... V>
void dispatch_tiles(int v, F&& f, std::integer_sequence<int, V...>) {
  v = flash_generic_tiles(v);
  ((v == V ? (f.template operator()<V>(), true) : false) || ...);
}
template <class F>
void dispatch_tiles(int v, F&& f) {
  dispatch_tiles(v, f, std::make_integer_sequence<int, kFlashTileCount>{});
}

// The tile shape the wide head sizes take with 16-byte copies: the calling thread's
// KernelConfig::flash_tiles; with 8-byte copies (hs % 8 != 0, rare) always the default.
inline int wide_tiles(bool v16) {
  return v16 ? flash_generic_tiles(kernel_config().flash_tiles) : kFlashDefaultTiles;
}

// Calls f.template operator()<HSP, V16>() for the padded head size and the copy width.
template <class F>
void dispatch(int hs, bool v16, F&& f) {
  switch (padded_head(hs) * 2 + v16) {
    case 32: f.template operator()<16, false>(); break;
    case 33: f.template operator()<16, true>(); break;
    case 64: f.template operator()<32, false>(); break;
    case 65: f.template operator()<32, true>(); break;
    case 128: f.template operator()<64, false>(); break;
    case 129: f.template operator()<64, true>(); break;
    case 160: f.template operator()<80, false>(); break;
    case 161: f.template operator()<80, true>(); break;
    case 192: f.template operator()<96, false>(); break;
    case 193: f.template operator()<96, true>(); break;
    case 256: f.template operator()<128, false>(); break;
    default: f.template operator()<128, true>(); break;
  }
}

// The launches of one padded head size: the narrow configuration up to 64, the tile shapes
// above (every shape with 16-byte copies, the default with 8-byte ones); DROP instantiates the
// attention-dropout kernels.
template <class E, int HSP, bool V16, bool DROP>
void forward_for(E* out, float* lse, const E* qkv, int B, int T, int C, int NH, float sl2,
                 Dropout dr) {
  if constexpr (HSP <= 64) {
    launch_forward<E, HSP, V16, kFwdTiles, kFwdWarps, kBK, kFwdMinBlocks, DROP>(out, lse, qkv, B, T,
                                                                                C, NH, sl2, dr);
  } else {
    auto launch = [&]<int V>() {
      using W = WideTiles<V>;
      launch_forward<E, HSP, V16, W::kFwdTiles, W::kWarps, W::kKeys, W::kFwdMinBlocks, DROP>(
          out, lse, qkv, B, T, C, NH, sl2, dr, W::kShape.name);
    };
    if constexpr (V16)
      dispatch_tiles(wide_tiles(V16), launch);
    else
      launch.template operator()<kFlashDefaultTiles>();
  }
}

template <class E, int HSP, bool V16, bool DROP>
void backward_for(E* dqkv, float* D, const E* dout, const E* qkv, const E* out, const float* lse,
                  int B, int T, int C, int NH, float sl2, float scale, Dropout dr) {
  // dQ first: it also writes D, which dK/dV reads.
  if constexpr (HSP <= 64) {
    launch_backward_dq<E, HSP, V16, kDqWarps, kBK, kDqKeyChunk, kDqMinBlocks, DROP>(
        dqkv, D, dout, qkv, out, lse, B, T, C, NH, sl2, scale, dr);
    launch_backward_dkdv<E, HSP, V16, kKvWarps, kBK, kKvQueryChunk, kKvMinBlocks, DROP>(
        dqkv, dout, qkv, lse, D, B, T, C, NH, sl2, scale, dr);
  } else {
    auto launch = [&]<int V>() {
      using W = WideTiles<V>;
      launch_backward_dq<E, HSP, V16, W::kWarps, W::kKeys, W::kDqKeyChunk, 1, DROP>(
          dqkv, D, dout, qkv, out, lse, B, T, C, NH, sl2, scale, dr, W::kShape.name);
      launch_backward_dkdv<E, HSP, V16, W::kWarps, W::kKeys, W::kKvQueryChunk, 1, DROP>(
          dqkv, dout, qkv, lse, D, B, T, C, NH, sl2, scale, dr, W::kShape.name);
    };
    if constexpr (V16)
      dispatch_tiles(wide_tiles(V16), launch);
    else
      launch.template operator()<kFlashDefaultTiles>();
  }
}

// The generic kernels for element type E, whatever the device (the bf16 entry points of
// flash_attention.cu try the wgmma kernels first). Arguments as flash_attention.cuh's.
template <class E>
void forward(E* out, float* lse, const E* qkv, int B, int T, int C, int NH, float dropout,
             DropKey key, HeadRange heads) {
  if (size_t(B) * T * C == 0) return;
  const int hs = C / NH;
  const float sl2 = float(1.4426950408889634 / std::sqrt(double(hs)));
  const bool v16 = hs % 8 == 0 && aligned16(qkv);
  if (dropout > 0.0f)
    dispatch(hs, v16, [&]<int HSP, bool V16>() {
      forward_for<E, HSP, V16, true>(out, lse, qkv, B, T, C, NH, sl2,
                                     make_dropout(dropout, key, heads));
    });
  else
    dispatch(hs, v16, [&]<int HSP, bool V16>() {
      forward_for<E, HSP, V16, false>(out, lse, qkv, B, T, C, NH, sl2, Dropout{});
    });
}

template <class E>
void backward(E* dqkv, const E* dout, const E* qkv, const E* out, const float* lse, int B, int T,
              int C, int NH, float dropout, DropKey key, HeadRange heads) {
  if (size_t(B) * T * C == 0) return;
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(double(hs));
  const float sl2 = float(1.4426950408889634 * scale);
  const bool v16 = hs % 8 == 0 && aligned16(qkv) && aligned16(dout) && aligned16(out);
  Scratch<float> D(size_t(B) * NH * T);  // rowsum(dout ∘ out): written by dQ, read by dK/dV
  if (dropout > 0.0f)
    dispatch(hs, v16, [&]<int HSP, bool V16>() {
      backward_for<E, HSP, V16, true>(dqkv, D, dout, qkv, out, lse, B, T, C, NH, sl2, float(scale),
                                      make_dropout(dropout, key, heads));
    });
  else
    dispatch(hs, v16, [&]<int HSP, bool V16>() {
      backward_for<E, HSP, V16, false>(dqkv, D, dout, qkv, out, lse, B, T, C, NH, sl2, float(scale),
                                       Dropout{});
    });
}

}  // namespace gpt::cuda::flash
