#include "kernels/flash_attention.cuh"

#include "kernels/column_sum.cuh"
#include "kernels/matmul.cuh"
#include "kernels/mma_fragments.cuh"
#include "kernels/sm90/capability.cuh"
#include "kernels/sm90/flash_attention_sm90.cuh"
#include "kernels/smem_ptx.cuh"

#include <cmath>
#include <cstdint>


namespace gpt::cuda {
namespace {

constexpr int kBK = 64;  // rows per streamed tile: keys (forward, dQ), queries (dK/dV)

// ---- PTX wrappers (sm_80+; cp.async and ldmatrix in kernels/smem_ptx.cuh) ----

// c += a · b on one m16n8k16 tile: bf16 operands, fp32 accumulators.
//   a (16×16, row-major): a[0] (row g, k 2t..2t+1), a[1] (row g+8), a[2] (row g, k +8), a[3]
//   b (16×8): b0 (k 2t..2t+1, col g), b1 (k +8);  c: c0,c1 (row g, col 2t..), c2,c3 (row g+8)
// with g = lane/4, t = lane%4.
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Shared tiles are row-major [rows][HSP + 8] bf16: rows 16-byte aligned, and the 8 rows an
// ldmatrix phase reads fall in distinct banks (row stride ≡ 16 bytes mod 128).
template <int HSP>
constexpr int lds() {
  return HSP + 8;
}

// Rows [row0, row0 + R) of one head's [T, hs] slice (element (r, d) at src[r·ld + d]) into the
// shared tile dst [R][HSP + 8] with cp.async; zeros for rows >= T and columns >= hs.
// V16: 16-byte copies (hs, ld and the base 8-element aligned), else 8-byte copies (hs % 4 == 0).
// Thread i copies the chunk (i / CPR, i % CPR) and every NT / CPR rows after it.
template <int R, int HSP, int NT, bool V16>
__device__ __forceinline__ void load_tile(bf16* dst, const bf16* src, size_t ld, int row0, int T,
                                          int hs) {
  constexpr int LDS = lds<HSP>(), CW = V16 ? 8 : 4, CPR = HSP / CW, RSTEP = NT / CPR;
  static_assert(NT % CPR == 0, "whole rows per pass");
  const int r = threadIdx.x / CPR, d = (threadIdx.x % CPR) * CW;
  const bf16* p = src + size_t(row0 + r) * ld + d;
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
    s += RSTEP * LDS * sizeof(bf16);
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

// The K/V double buffer of the forward and dQ kernels: issues the copy of key tile kt + 1 into
// the buffer not in use, then waits until tile kt (issued one step earlier) has landed.
template <int HSP, int NT, bool V16>
__device__ __forceinline__ void prefetch_kv(bf16* sK, bf16* sV, int kt, int nkt, const bf16* base,
                                            int C, size_t ld, int T, int hs) {
  constexpr int LDS = lds<HSP>();
  if (kt + 1 < nkt) {
    const int next = (kt + 1) * kBK, other = ((kt & 1) ^ 1) * kBK * LDS;
    load_tile<kBK, HSP, NT, V16>(sK + other, base + C, ld, next, T, hs);
    load_tile<kBK, HSP, NT, V16>(sV + other, base + 2 * C, ld, next, T, hs);
    cp_async_commit();
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
}

// acc[16 × 8·NC] (+)= A[16 × HSP] · Bᵀ, B = rows [0, 8·NC) of the row-major tile at `tile`.
template <int HSP, int NC>
__device__ __forceinline__ void mma_abt(float acc[NC][4], const uint32_t a[HSP / 16][4],
                                        const bf16* tile, const Lanes& ln) {
  constexpr int LDS = lds<HSP>();
#pragma unroll
  for (int np = 0; np < NC / 2; ++np)
#pragma unroll
    for (int kk = 0; kk < HSP / 16; ++kk) {
      uint32_t b[4];
      ldsm_x4(b, smem_addr(tile + (np * 16 + ln.b_row) * LDS + kk * 16 + ln.b_col));
      mma(acc[2 * np], a[kk], b[0], b[1]);
      mma(acc[2 * np + 1], a[kk], b[2], b[3]);
    }
}

// acc[16 × HSP] += P[16 × 16·KS] · X, P as accumulator tiles p[2·KS][4] (rounded to bf16 here),
// X = rows [0, 16·KS) of the row-major tile at `tile` ([k][HSP], read with ldmatrix.trans).
template <int HSP, int KS>
__device__ __forceinline__ void mma_pv(float acc[HSP / 8][4], const float p[2 * KS][4],
                                       const bf16* tile, const Lanes& ln) {
  constexpr int LDS = lds<HSP>();
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) {
    uint32_t a[4];
    acc_to_a(a, p[2 * kk], p[2 * kk + 1]);
#pragma unroll
    for (int dp = 0; dp < HSP / 16; ++dp) {
      uint32_t b[4];
      ldsm_x4_t(b, smem_addr(tile + (kk * 16 + ln.t_row) * LDS + dp * 16 + ln.t_col));
      mma(acc[2 * dp], a, b[0], b[1]);
      mma(acc[2 * dp + 1], a, b[2], b[3]);
    }
  }
}

// ---- Forward: one block per BM = 16·MT·NW query rows (MT m-tiles per warp, Q fragments in
// registers), streaming 64-key K and V tiles through a cp.async double buffer.
template <int HSP, int MT, int NW, int MINB, bool V16>
__global__ void __launch_bounds__(NW * 32, MINB)
    flash_forward_kernel(bf16* out, float* lse, const bf16* qkv, int T, int C, int NH,
                         float sl2) {
  constexpr int NT = NW * 32, BM = 16 * MT * NW, LDS = lds<HSP>(), KS = HSP / 16, DT = HSP / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);  // [BM][LDS]
  bf16* sK = sQ + BM * LDS;                  // [2][kBK][LDS]
  bf16* sV = sK + 2 * kBK * LDS;             // [2][kBK][LDS]
  const int bh = blockIdx.x, qb = gridDim.y - 1 - blockIdx.y;  // longest rows first
  const int b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const Lanes ln(lane);
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * hs;
  const int q_first = qb * BM, wq0 = q_first + warp * 16 * MT;
  const int nkt = (min(q_first + BM, T) - 1) / kBK + 1;

  load_tile<BM, HSP, NT, V16>(sQ, base, ld, q_first, T, hs);
  load_tile<kBK, HSP, NT, V16>(sK, base + C, ld, 0, T, hs);
  load_tile<kBK, HSP, NT, V16>(sV, base + 2 * C, ld, 0, T, hs);
  cp_async_commit();

  uint32_t qf[MT][KS][4];
  float o[MT][DT][4];
  float m[MT][2];  // running max of the raw scores
  float l[MT][2];  // partial row sums (this lane's columns)
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.f;
  }

  for (int kt = 0; kt < nkt; ++kt) {
    const int buf = kt & 1;
    prefetch_kv<HSP, NT, V16>(sK, sV, kt, nkt, base, C, ld, T, hs);
    if (kt == 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < KS; ++kk)
          ldsm_x4(qf[mt][kk],
                  smem_addr(sQ + (warp * 16 * MT + mt * 16 + ln.a_row) * LDS + kk * 16 + ln.a_col));
    }
    const int k0 = kt * kBK;
    // Keys k0.. are visible to some row of this warp (then every row sees key k0: k0 is a
    // multiple of 64 and wq0 of 16·MT, so k0 <= wq0).
    if (k0 < wq0 + 16 * MT) {
      const bf16* cK = sK + buf * kBK * LDS;
      const bf16* cV = sV + buf * kBK * LDS;
      float s[MT][8][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
          s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
      for (int np = 0; np < 4; ++np)
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
          uint32_t bb[4];
          ldsm_x4(bb, smem_addr(cK + (np * 16 + ln.b_row) * LDS + kk * 16 + ln.b_col));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma(s[mt][2 * np], qf[mt][kk], bb[0], bb[1]);
            mma(s[mt][2 * np + 1], qf[mt][kk], bb[2], bb[3]);
          }
        }
      if (k0 + kBK - 1 > wq0) {  // the diagonal tile: keys after the query are masked
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < 8; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (k0 + nt * 8 + 2 * t + (e & 1) > wq0 + mt * 16 + g + (e >> 1) * 8)
                s[mt][nt][e] = -INFINITY;
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        float mx[2] = {m[mt][0], m[mt][1]};
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
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
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float p = ex2(fmaf(s[mt][nt][e], sl2, -ms[e >> 1]));
            s[mt][nt][e] = p;
            l[mt][e >> 1] += p;
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
      for (int kk = 0; kk < kBK / 16; ++kk) {
        uint32_t pa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) acc_to_a(pa[mt], s[mt][2 * kk], s[mt][2 * kk + 1]);
#pragma unroll
        for (int dp = 0; dp < HSP / 16; ++dp) {
          uint32_t bb[4];
          ldsm_x4_t(bb, smem_addr(cV + (kk * 16 + ln.t_row) * LDS + dp * 16 + ln.t_col));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma(o[mt][2 * dp], pa[mt], bb[0], bb[1]);
            mma(o[mt][2 * dp + 1], pa[mt], bb[2], bb[3]);
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
      const float inv = 1.0f / li;
      bf16* dst = out + (size_t(b) * T + q) * C + size_t(h) * hs;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        const int d = dt * 8 + 2 * t;
        if (d < hs)
          *reinterpret_cast<uint32_t*>(dst + d) =
              pack(o[mt][dt][2 * i] * inv, o[mt][dt][2 * i + 1] * inv);
      }
      if (t == 0) lse[size_t(bh) * T + q] = m[mt][i] * sl2 + log2f(li);
    }
}

// ---- Backward, dQ: one block per 16·NW query rows (one m-tile per warp; Q and dO fragments in
// registers), streaming 64-key K and V tiles. Also computes D = rowsum(dO ∘ O) of its rows from
// shared memory and writes it for the dK/dV kernel (which runs after it).
template <int HSP, int NW, int KC, int MINB, bool V16>
__global__ void __launch_bounds__(NW * 32, MINB)
    flash_backward_dq_kernel(bf16* dqkv, float* Dg, const bf16* dout, const bf16* qkv,
                             const bf16* out, const float* lse, int T, int C, int NH, float sl2,
                             float scale) {
  constexpr int NT = NW * 32, BM = 16 * NW, LDS = lds<HSP>(), KS = HSP / 16, DT = HSP / 8;
  constexpr int NC = KC / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);  // [BM][LDS]
  bf16* sdO = sQ + BM * LDS;                 // [BM][LDS]
  bf16* sO = sdO + BM * LDS;                 // [BM][LDS]
  bf16* sK = sO + BM * LDS;                  // [2][kBK][LDS]
  bf16* sV = sK + 2 * kBK * LDS;             // [2][kBK][LDS]
  const int bh = blockIdx.x, qb = gridDim.y - 1 - blockIdx.y;  // longest rows first
  const int b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const Lanes ln(lane);
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * hs;
  const size_t ooff = size_t(b) * T * C + size_t(h) * hs;
  const int q_first = qb * BM, wq0 = q_first + warp * 16;
  const int nkt = (min(q_first + BM, T) - 1) / kBK + 1;

  load_tile<BM, HSP, NT, V16>(sQ, base, ld, q_first, T, hs);
  load_tile<BM, HSP, NT, V16>(sdO, dout + ooff, C, q_first, T, hs);
  load_tile<BM, HSP, NT, V16>(sO, out + ooff, C, q_first, T, hs);
  load_tile<kBK, HSP, NT, V16>(sK, base + C, ld, 0, T, hs);
  load_tile<kBK, HSP, NT, V16>(sV, base + 2 * C, ld, 0, T, hs);
  cp_async_commit();

  float rl[2], rd[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = wq0 + g + 8 * i;
    rl[i] = q < T ? lse[size_t(bh) * T + q] : 0.f;
  }
  uint32_t qf[KS][4], of[KS][4];
  float dq[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt) dq[dt][0] = dq[dt][1] = dq[dt][2] = dq[dt][3] = 0.f;

  for (int kt = 0; kt < nkt; ++kt) {
    const int buf = kt & 1;
    prefetch_kv<HSP, NT, V16>(sK, sV, kt, nkt, base, C, ld, T, hs);
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
        acc = fma_dot8(*reinterpret_cast<const uint4*>(sdO + r * LDS + c0 + c),
                       *reinterpret_cast<const uint4*>(sO + r * LDS + c0 + c), acc);
      }
      acc += __shfl_xor_sync(0xffffffffu, acc, 1);  // commutative: both lanes hold the same bits
      if (lane % 2 == 0 && wq0 + lane / 2 < T) Dg[size_t(bh) * T + wq0 + lane / 2] = acc;
      rd[0] = __shfl_sync(0xffffffffu, acc, 2 * g);
      rd[1] = __shfl_sync(0xffffffffu, acc, 2 * (g + 8));
    }
    const int k0 = kt * kBK;
    if (k0 < wq0 + 16) {
      const bf16* cK = sK + buf * kBK * LDS;
      const bf16* cV = sV + buf * kBK * LDS;
#pragma unroll 1
      for (int c = 0; c < kBK; c += KC) {
        const int kc0 = k0 + c;
        if (kc0 >= wq0 + 16) break;  // every key of the chunk is after every row of the warp
        float s[NC][4], dp[NC][4];
#pragma unroll
        for (int nt = 0; nt < NC; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.f;
        mma_abt<HSP, NC>(s, qf, cK + c * LDS, ln);   // S = Q · Kᵀ
        mma_abt<HSP, NC>(dp, of, cV + c * LDS, ln);  // dP = dO · Vᵀ
        const bool diag = kc0 + KC - 1 > wq0;
#pragma unroll
        for (int nt = 0; nt < NC; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float pv = ex2(fmaf(s[nt][e], sl2, -rl[e >> 1]));
            if (diag && kc0 + nt * 8 + 2 * t + (e & 1) > wq0 + g + (e >> 1) * 8) pv = 0.f;
            dp[nt][e] = pv * (dp[nt][e] - rd[e >> 1]);  // dS
          }
        mma_pv<HSP, KC / 16>(dq, dp, cK + c * LDS, ln);  // dQ += dS · K
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = wq0 + g + 8 * i;
    if (q >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + q) * ld + size_t(h) * hs;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      const int d = dt * 8 + 2 * t;
      if (d < hs)
        *reinterpret_cast<uint32_t*>(dst + d) =
            pack(dq[dt][2 * i] * scale, dq[dt][2 * i + 1] * scale);
    }
  }
}

// ---- Backward, dK and dV: one block per 16·NW keys (one m-tile of keys per warp; K and V
// fragments in registers), streaming 64-query Q and dO tiles (and their lse, D) through a
// cp.async double buffer; the products are formed transposed (Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ), so
// Pᵀ and dSᵀ stay in registers as the A operands of dV += Pᵀ·dO and dK += dSᵀ·Q.
template <int HSP, int NW, int QC, int MINB, bool V16>
__global__ void __launch_bounds__(NW * 32, MINB)
    flash_backward_dkdv_kernel(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse,
                               const float* Dg, int T, int C, int NH, float sl2, float scale) {
  constexpr int NT = NW * 32, BN = 16 * NW, LDS = lds<HSP>(), KS = HSP / 16, DT = HSP / 8;
  constexpr int NC = QC / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sK = reinterpret_cast<bf16*>(smem);  // [BN][LDS]
  bf16* sV = sK + BN * LDS;                  // [BN][LDS]
  bf16* sQ = sV + BN * LDS;                  // [2][kBK][LDS]
  bf16* sdO = sQ + 2 * kBK * LDS;            // [2][kBK][LDS]
  float* sL = reinterpret_cast<float*>(sdO + 2 * kBK * LDS);  // [2][kBK]
  float* sD = sL + 2 * kBK;                                   // [2][kBK]
  const int bh = blockIdx.x, kb = blockIdx.y;  // the first key blocks see the most queries
  const int b = bh / NH, h = bh % NH, hs = C / NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const Lanes ln(lane);
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * hs;
  const bf16* dbase = dout + size_t(b) * T * C + size_t(h) * hs;
  const float* lrow = lse + size_t(bh) * T;
  const float* drow = Dg + size_t(bh) * T;
  const int key0 = kb * BN, wk0 = key0 + warp * 16;
  const int qt0 = key0 / kBK, nq = (T + kBK - 1) / kBK;

  auto load_q = [&](int qt, int buf) {
    load_tile<kBK, HSP, NT, V16>(sQ + buf * kBK * LDS, base, ld, qt * kBK, T, hs);
    load_tile<kBK, HSP, NT, V16>(sdO + buf * kBK * LDS, dbase, C, qt * kBK, T, hs);
    for (int i = threadIdx.x; i < 2 * kBK; i += NT) {
      const int j = i % kBK, q = qt * kBK + j;
      const bool ok = q < T;
      if (i < kBK)
        cp_async4(smem_addr(sL + buf * kBK + j), ok ? lrow + q : lrow, ok);
      else
        cp_async4(smem_addr(sD + buf * kBK + j), ok ? drow + q : drow, ok);
    }
  };
  load_tile<BN, HSP, NT, V16>(sK, base + C, ld, key0, T, hs);
  load_tile<BN, HSP, NT, V16>(sV, base + 2 * C, ld, key0, T, hs);
  load_q(qt0, 0);
  cp_async_commit();

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
    const int q0 = qt * kBK;
    if (q0 + kBK - 1 >= wk0) {
      const bf16* cQ = sQ + buf * kBK * LDS;
      const bf16* cdO = sdO + buf * kBK * LDS;
      const float* cL = sL + buf * kBK;
      const float* cD = sD + buf * kBK;
#pragma unroll 1
      for (int c = 0; c < kBK; c += QC) {
        const int qc0 = q0 + c;
        if (qc0 + QC - 1 < wk0) continue;  // every query of the chunk is before every key
        float s[NC][4], dp[NC][4];
#pragma unroll
        for (int nt = 0; nt < NC; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.f;
        mma_abt<HSP, NC>(s, kf, cQ + c * LDS, ln);    // Sᵀ = K · Qᵀ
        mma_abt<HSP, NC>(dp, vf, cdO + c * LDS, ln);  // dPᵀ = V · dOᵀ
        const bool msk = qc0 < wk0 + 15 || qc0 + QC > T;
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
            s[nt][e] = pv;                                       // Pᵀ
            dp[nt][e] = pv * (dp[nt][e] - ((e & 1) ? D.y : D.x));  // dSᵀ
          }
        }
        mma_pv<HSP, QC / 16>(dv, s, cdO + c * LDS, ln);  // dV += Pᵀ · dO
        mma_pv<HSP, QC / 16>(dk, dp, cQ + c * LDS, ln);  // dK += dSᵀ · Q (scaled at the end)
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int key = wk0 + g + 8 * i;
    if (key >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + key) * ld + size_t(h) * hs;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      const int d = dt * 8 + 2 * t;
      if (d < hs) {
        *reinterpret_cast<uint32_t*>(dst + C + d) =
            pack(dk[dt][2 * i] * scale, dk[dt][2 * i + 1] * scale);
        *reinterpret_cast<uint32_t*>(dst + 2 * C + d) = pack(dv[dt][2 * i], dv[dt][2 * i + 1]);
      }
    }
  }
}

int padded_head(int hs) { return hs <= 16 ? 16 : hs <= 32 ? 32 : 64; }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class Kernel>
void set_smem(Kernel kernel, size_t bytes) {
  GPT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
}

// Launches. Tile configurations: forward MT m-tiles of 16 rows per warp and NW warps; dQ NW
// warps of 16 rows, KC keys per register chunk; dK/dV NW warps of 16 keys, QC queries per register
// chunk; MINB = __launch_bounds__ min blocks.
template <int HSP, bool V16, int MT, int NW, int MINB>
void launch_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH,
                    float sl2) {
  constexpr int BM = 16 * MT * NW;
  const size_t smem = size_t(BM + 4 * kBK) * lds<HSP>() * sizeof(bf16);
  auto kernel = flash_forward_kernel<HSP, MT, NW, MINB, V16>;
  set_smem(kernel, smem);
  const dim3 grid(B * NH, ceil_div(T, BM));
  kernel<<<grid, NW * 32, smem, stream()>>>(out, lse, qkv, T, C, NH, sl2);
  GPT_CUDA_CHECK_LAUNCH();
}

template <int HSP, bool V16, int NW, int KC, int MINB>
void launch_backward_dq(bf16* dqkv, float* D, const bf16* dout, const bf16* qkv, const bf16* out,
                        const float* lse, int B, int T, int C, int NH, float sl2, float scale) {
  constexpr int BM = 16 * NW;
  const size_t smem = size_t(3 * BM + 4 * kBK) * lds<HSP>() * sizeof(bf16);
  auto kernel = flash_backward_dq_kernel<HSP, NW, KC, MINB, V16>;
  set_smem(kernel, smem);
  const dim3 grid(B * NH, ceil_div(T, BM));
  kernel<<<grid, NW * 32, smem, stream()>>>(dqkv, D, dout, qkv, out, lse, T, C, NH, sl2, scale);
  GPT_CUDA_CHECK_LAUNCH();
}

template <int HSP, bool V16, int NW, int QC, int MINB>
void launch_backward_dkdv(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse,
                          const float* D, int B, int T, int C, int NH, float sl2, float scale) {
  constexpr int BN = 16 * NW;
  const size_t smem =
      size_t(2 * BN + 4 * kBK) * lds<HSP>() * sizeof(bf16) + 4 * kBK * sizeof(float);
  auto kernel = flash_backward_dkdv_kernel<HSP, NW, QC, MINB, V16>;
  set_smem(kernel, smem);
  const dim3 grid(B * NH, ceil_div(T, BN));
  kernel<<<grid, NW * 32, smem, stream()>>>(dqkv, dout, qkv, lse, D, T, C, NH, sl2, scale);
  GPT_CUDA_CHECK_LAUNCH();
}

// The tile configurations in use: the fastest of scripts/bench/flash_attention_bench.cu's sweep
// (which overrides them) at head size 64, T 1024.
constexpr int kFwdTiles = 2, kFwdWarps = 4, kFwdMinBlocks = 2;  // 128 rows a block, 32 a warp
constexpr int kDqWarps = 4, kDqKeyChunk = 32, kDqMinBlocks = 3;  // 64 rows per block
constexpr int kKvWarps = 4, kKvQueryChunk = 16, kKvMinBlocks = 3;  // 64 keys per block

// Calls f.template operator()<HSP, V16>() for the padded head size and the copy width.
template <class F>
void dispatch(int hs, bool v16, F&& f) {
  switch (padded_head(hs) * 2 + v16) {
    case 32: f.template operator()<16, false>(); break;
    case 33: f.template operator()<16, true>(); break;
    case 64: f.template operator()<32, false>(); break;
    case 65: f.template operator()<32, true>(); break;
    case 128: f.template operator()<64, false>(); break;
    default: f.template operator()<64, true>(); break;
  }
}

}  // namespace

bool flash_attention_uses_hopper(int C, int NH) {
  return flash_attention_supported(C, NH) && C / NH == 64 && kernel_config().sm90_attention &&
         sm90_available();
}

bool flash_attention_supported(int C, int NH) {
  if (NH <= 0 || C % NH != 0) return false;
  const int hs = C / NH;
  return hs % 4 == 0 && hs <= 64;
}

void flash_attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH) {
  if (size_t(B) * T * C == 0) return;
  const int hs = C / NH;
  const float sl2 = float(1.4426950408889634 / std::sqrt(double(hs)));
  const bool v16 = hs % 8 == 0 && aligned16(qkv);
  if (v16 && B * NH <= 65535 && flash_attention_uses_hopper(C, NH)) {
    flash_sm90_forward(out, lse, qkv, B, T, C, NH, sl2);
    return;
  }
  dispatch(hs, v16, [&]<int HSP, bool V16>() {
    launch_forward<HSP, V16, kFwdTiles, kFwdWarps, kFwdMinBlocks>(out, lse, qkv, B, T, C, NH,
                                                                  sl2);
  });
}

void flash_attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out,
                              const float* lse, int B, int T, int C, int NH, float* dbias) {
  if (size_t(B) * T * C == 0) return;
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(double(hs));
  const float sl2 = float(1.4426950408889634 * scale);
  const bool v16 = hs % 8 == 0 && aligned16(qkv) && aligned16(dout) && aligned16(out);
  if (v16 && B * NH <= 65535 && flash_attention_uses_hopper(C, NH)) {  // grid.y = B·NH
    // The bias sums in the kernels that store dqkv (T % 64 == 0: each warpgroup's rows are one
    // of bias_grad's 64-row chunks), the same bits as bias_grad over the stored dqkv.
    const bool fused = dbias && T % 64 == 0;
    Scratch<float> partial(fused ? size_t(B) * T / 64 * 3 * C : 0);
    // Scratch(0) is a 1-byte allocation, not null: without the sums the kernels get null.
    flash_sm90_backward(dqkv, fused ? partial.get() : nullptr, dout, qkv, out, lse, B, T, C, NH,
                        sl2, float(scale));
    if (fused)
      column_sum_finish<1>(ColumnTargets<1>{{dbias}}, std::move(partial), B * T / 64, 3 * C);
    else if (dbias)
      bias_grad(dbias, dqkv, B * T, 3 * C);
    return;
  }
  Scratch<float> D(size_t(B) * NH * T);  // rowsum(dout ∘ out): written by dQ, read by dK/dV
  dispatch(hs, v16, [&]<int HSP, bool V16>() {
    // dQ first: it also writes D, which dK/dV reads.
    launch_backward_dq<HSP, V16, kDqWarps, kDqKeyChunk, kDqMinBlocks>(
        dqkv, D, dout, qkv, out, lse, B, T, C, NH, sl2, float(scale));
    launch_backward_dkdv<HSP, V16, kKvWarps, kKvQueryChunk, kKvMinBlocks>(
        dqkv, dout, qkv, lse, D, B, T, C, NH, sl2, float(scale));
  });
  if (dbias) bias_grad(dbias, dqkv, B * T, 3 * C);
}

}  // namespace gpt::cuda
