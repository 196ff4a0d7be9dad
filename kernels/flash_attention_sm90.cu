#include "kernels/flash_attention_sm90.cuh"

#include <atomic>

#include "kernels/smem_ptx.cuh"
#include "kernels/mma_fragments.cuh"
#include "kernels/wgmma.cuh"

// Warpgroups per block (64 rows or keys each) and __launch_bounds__ minimum blocks per SM.
// Overridable when compiling, for tuning (scripts/bench/flash_attention_bench.cu).
#ifndef GPT_FLASH90_FWD_CFG
#define GPT_FLASH90_FWD_CFG 1, 4
#endif
#ifndef GPT_FLASH90_DQ_CFG
#define GPT_FLASH90_DQ_CFG 1, 3
#endif
#ifndef GPT_FLASH90_KV_CFG
#define GPT_FLASH90_KV_CFG 1, 3
#endif

namespace gpt::cuda::sm90 {
namespace {

// The qkv bias sums (below): one staged 64-row tile of fp32 per warpgroup, in the tiles' memory.
constexpr int kSumLd = 72;  // floats per row of the staged tile (pads the bank pattern)
constexpr int kSumTileBytes = kTileRows * kSumLd * 4;

#ifdef GPT_SM90_WGMMA
constexpr int kHS = 64;  // the head size these kernels take

// Rows [row0, row0 + R) of one head's [T, 64] slice (element (r, d) at src[r·ld + d]) into the
// swizzled tile at shared address dst, by NT threads with 16-byte cp.async; zeros past T.
template <int R, int NT>
__device__ __forceinline__ void load_tile(uint32_t dst, const bf16* src, size_t ld, int row0,
                                          int T) {
  constexpr int RSTEP = NT / 8;
  const int r = threadIdx.x / 8, c = threadIdx.x % 8;
#pragma unroll
  for (int k = 0; k * RSTEP < R; ++k) {
    const int row = r + k * RSTEP;
    if (R % RSTEP == 0 || row < R) {
      const bool ok = row0 + row < T;
      cp_async16(dst + sw128(row, c), ok ? src + size_t(row0 + row) * ld + c * 8 : src, ok);
    }
  }
}

// The dynamic shared memory rounded up to the 1024-byte alignment of the swizzled tiles (the
// launches request 1024 bytes extra).
__device__ __forceinline__ uint32_t smem_base() {
  extern __shared__ __align__(16) unsigned char smem[];
  return (smem_addr(smem) + 1023u) & ~1023u;
}

// Waits for the copies of the current tile (the next is left in flight when `more`), publishes
// them to the async proxy and synchronises the block.
__device__ __forceinline__ void tile_ready(bool more) {
  if (more)
    cp_async_wait<1>();
  else
    cp_async_wait<0>();
  fence_smem();
  __syncthreads();
}

// The K/V double buffer of the forward and dQ kernels: issues the copy of key tile kt + 1 into the
// buffer not in use, waits for tile kt (issued one step earlier) and returns its buffer's offset.
template <int NT>
__device__ __forceinline__ uint32_t prefetch_kv(uint32_t sK, uint32_t sV, int kt, int nkt,
                                                const bf16* base, int C, size_t ld, int T) {
  const uint32_t buf = (kt & 1) * kTileBytes;
  const bool more = kt + 1 < nkt;
  if (more) {
    const int next = (kt + 1) * kTileRows;
    load_tile<kTileRows, NT>(sK + (buf ^ kTileBytes), base + C, ld, next, T);
    load_tile<kTileRows, NT>(sV + (buf ^ kTileBytes), base + 2 * C, ld, next, T);
    cp_async_commit();
  }
  tile_ready(more);
  return buf;
}

// The 16×16 A fragments of a 64-column accumulator (rounded to bf16).
__device__ __forceinline__ void to_a(uint32_t (&a)[4][4], const float (&d)[32]) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) acc_to_a(a[kk], &d[8 * kk], &d[8 * kk + 4]);
}

// ---- The qkv bias gradient: column sums of the stored dQ, dK and dV, summed by the kernels that
// store them, the way column_sum_bf16_partial_kernel sums a 64-row chunk of dqkv (bias_grad), so
// the bits are the same: the bf16-rounded values, thread row y adding rows y, y + 8, ... in order,
// then the 8 row sums in order, into partial[chunk][column] with chunk = (b·T + row) / 64.

// Staged tile i of the block, in the shared memory of the tiles as a generic pointer (free once
// the main loop is done).
__device__ __forceinline__ float* sum_tile(int i) {
  extern __shared__ __align__(16) unsigned char smem[];
  return reinterpret_cast<float*>(smem + (smem_base() - smem_addr(smem)) + i * kSumTileBytes);
}

// This warpgroup's 64×64 accumulator times mul, rounded to bf16 as stored, into tile[row][col].
__device__ __forceinline__ void stage_rounded(float* tile, const float (&acc)[32], float mul,
                                              int warp, int g, int t) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float* row = tile + (warp * 16 + g + 8 * i) * kSumLd;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 v = __bfloat1622float2(
          __floats2bfloat162_rn(acc[4 * j + 2 * i] * mul, acc[4 * j + 2 * i + 1] * mul));
      *reinterpret_cast<float2*>(row + j * 8 + 2 * t) = v;
    }
  }
}

// Column col of a staged 64-row tile, summed in column_sum_bf16_partial_kernel's order.
__device__ __forceinline__ float chunk_column_sum(const float* tile, int col) {
  float total = 0.0f;
#pragma unroll
  for (int y = 0; y < 8; ++y) {
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) acc += tile[(y + 8 * k) * kSumLd + col];
    total += acc;
  }
  return total;
}

// Stages acc (scaled by mul) and writes its 64 column sums to dst[0, 64) (null: the warpgroup's
// rows lie past T); with acc2, also acc2's (scaled by mul2) to dst2, in one pass (the second
// half of the warpgroup sums those). All threads of the block call it together.
__device__ __forceinline__ void store_column_sums(float* dst, const float (&acc)[32], float mul,
                                                  int wg, int warp, int g, int t,
                                                  float* dst2 = nullptr,
                                                  const float (*acc2)[32] = nullptr,
                                                  float mul2 = 1.0f) {
  float* tile = sum_tile(acc2 ? 2 * wg : wg);
  __syncthreads();  // the tiles' last readers are done
  stage_rounded(tile, acc, mul, warp, g, t);
  if (acc2) stage_rounded(tile + kTileRows * kSumLd, *acc2, mul2, warp, g, t);
  __syncthreads();
  const int col = threadIdx.x % 128;
  if (col < 64) {
    if (dst) dst[col] = chunk_column_sum(tile, col);
  } else if (acc2 && dst2) {
    dst2[col - 64] = chunk_column_sum(tile + kTileRows * kSumLd, col - 64);
  }
}

#endif  // GPT_SM90_WGMMA

// ---- Forward: one block per 64·NWG query rows (a warpgroup per 64), streaming 64-key K and V
// tiles through a cp.async double buffer. S = Q·Kᵀ (A, B from shared), then O += P·V with P from
// registers. Same online softmax as the generic kernel.
template <int NWG, int MINB>
__global__ void __launch_bounds__(NWG * 128, MINB)
    flash_forward_sm90_kernel(bf16* out, float* lse, const bf16* qkv, int T, int C, int NH,
                              float sl2) {
#ifdef GPT_SM90_WGMMA
  constexpr int NT = NWG * 128, BM = 64 * NWG;
  const uint32_t sQ = smem_base(), sK = sQ + NWG * kTileBytes, sV = sK + 2 * kTileBytes;
  const int bh = blockIdx.y, qb = gridDim.x - 1 - blockIdx.x;  // longest rows first
  const int b = bh / NH, h = bh % NH;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * kHS;
  const int q_first = qb * BM, wq0 = q_first + wg * 64;
  const int nkt = (min(q_first + BM, T) - 1) / kTileRows + 1;
  const uint32_t myQ = sQ + wg * kTileBytes;

  load_tile<BM, NT>(sQ, base, ld, q_first, T);
  load_tile<kTileRows, NT>(sK, base + C, ld, 0, T);
  load_tile<kTileRows, NT>(sV, base + 2 * C, ld, 0, T);
  cp_async_commit();

  float o[32], s[32], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 32; ++i) o[i] = s[i] = 0.f;

  for (int kt = 0; kt < nkt; ++kt) {
    const uint32_t buf = prefetch_kv<NT>(sK, sV, kt, nkt, base, C, ld, T);
    const int k0 = kt * kTileRows;
    if (k0 <= wq0) {  // some key of the tile is visible to the warpgroup (uniform per warpgroup)
      fence_regs(s);
      fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mma_ss<0, 0>(s, desc_k(myQ, kk), desc_k(sK + buf, kk), kk > 0);
      commit();
      wait<0>();
      fence_regs(s);
      if (k0 == wq0) {  // the diagonal tile: keys after the query are masked
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (j * 8 + 2 * t + (e & 1) > warp * 16 + g + (e >> 1) * 8) s[4 * j + e] = -INFINITY;
      }
      float mx[2] = {m[0], m[1]};
#pragma unroll
      for (int i = 0; i < 32; ++i) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s[i]);
      float corr[2], ms[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        corr[i] = ex2((m[i] - mx[i]) * sl2);  // first tile: ex2(-inf) = 0
        m[i] = mx[i];                         // finite: key k0 is visible to every row
        ms[i] = mx[i] * sl2;
        l[i] *= corr[i];
      }
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const float p = ex2(fmaf(s[i], sl2, -ms[(i >> 1) & 1]));
        s[i] = p;
        l[(i >> 1) & 1] += p;
        o[i] *= corr[(i >> 1) & 1];
      }
      uint32_t pa[4][4];
      to_a(pa, s);
      fence_regs(o);
      fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) mma_rs<1>(o, pa[kk], desc_mn(sV + buf, kk), true);
      commit();
      wait<0>();
      fence_regs(o);
    }
    __syncthreads();  // everyone is done with buffer buf before it is refilled
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float li = l[i];
    li += __shfl_xor_sync(0xffffffffu, li, 1);
    li += __shfl_xor_sync(0xffffffffu, li, 2);
    const int q = wq0 + warp * 16 + g + 8 * i;
    if (q >= T) continue;
    const float inv = 1.0f / li;
    bf16* dst = out + (size_t(b) * T + q) * C + size_t(h) * kHS;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      *reinterpret_cast<uint32_t*>(dst + j * 8 + 2 * t) =
          pack(o[4 * j + 2 * i] * inv, o[4 * j + 2 * i + 1] * inv);
    if (t == 0) lse[size_t(bh) * T + q] = m[i] * sl2 + log2f(li);
  }
#endif
}

// ---- Backward, dQ: one block per 64·NWG query rows, streaming 64-key K and V tiles. S = Q·Kᵀ
// and dP = dO·Vᵀ from shared memory, dS = P∘(dP − D) in registers, dQ += dS·K. Also computes
// D = rowsum(dO ∘ O) of its rows and writes it for the dK/dV kernel.
template <int NWG, int MINB>
__global__ void __launch_bounds__(NWG * 128, MINB)
    flash_backward_dq_sm90_kernel(bf16* dqkv, float* Dg, float* bias_partial, const bf16* dout,
                                  const bf16* qkv, const bf16* out, const float* lse, int T, int C,
                                  int NH, float sl2, float scale) {
#ifdef GPT_SM90_WGMMA
  constexpr int NT = NWG * 128, BM = 64 * NWG;
  const uint32_t sQ = smem_base(), sdO = sQ + NWG * kTileBytes, sO = sdO + NWG * kTileBytes;
  const uint32_t sK = sO + NWG * kTileBytes, sV = sK + 2 * kTileBytes;
  const int bh = blockIdx.y, qb = gridDim.x - 1 - blockIdx.x;  // longest rows first
  const int b = bh / NH, h = bh % NH;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * kHS;
  const size_t ooff = size_t(b) * T * C + size_t(h) * kHS;
  const int q_first = qb * BM, wq0 = q_first + wg * 64;
  const int nkt = (min(q_first + BM, T) - 1) / kTileRows + 1;
  const uint32_t myQ = sQ + wg * kTileBytes, mydO = sdO + wg * kTileBytes;

  load_tile<BM, NT>(sQ, base, ld, q_first, T);
  load_tile<BM, NT>(sdO, dout + ooff, C, q_first, T);
  load_tile<BM, NT>(sO, out + ooff, C, q_first, T);
  load_tile<kTileRows, NT>(sK, base + C, ld, 0, T);
  load_tile<kTileRows, NT>(sV, base + 2 * C, ld, 0, T);
  cp_async_commit();

  float rl[2], rd[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = wq0 + warp * 16 + g + 8 * i;
    rl[i] = q < T ? lse[size_t(bh) * T + q] : 0.f;
  }
  float dq[32], s[32], dp[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) dq[i] = s[i] = dp[i] = 0.f;

  for (int kt = 0; kt < nkt; ++kt) {
    const uint32_t buf = prefetch_kv<NT>(sK, sV, kt, nkt, base, C, ld, T);
    if (kt == 0) {
      // D of row r = 16·warp + lane/2 of the warpgroup: each lane of a pair sums four chunks of
      // the row, in order; the pair's sum is commutative, so both lanes hold the same bits.
      extern __shared__ __align__(16) unsigned char smem[];
      const unsigned char* gen = smem + (sQ - smem_addr(smem));  // generic pointer of sQ
      const int r = warp * 16 + lane / 2, row = wg * 64 + r;
      float acc = 0.f;
#pragma unroll
      for (int c = 4 * (lane % 2); c < 4 * (lane % 2) + 4; ++c) {
        const uint32_t off = sw128(row, c);
        const uint4 x = *reinterpret_cast<const uint4*>(gen + (sdO - sQ) + off);
        const uint4 y = *reinterpret_cast<const uint4*>(gen + (sO - sQ) + off);
        const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&xs[j]));
          const float2 bb = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&ys[j]));
          acc = fmaf(a.x, bb.x, acc);
          acc = fmaf(a.y, bb.y, acc);
        }
      }
      acc += __shfl_xor_sync(0xffffffffu, acc, 1);
      if (lane % 2 == 0 && wq0 + r < T) Dg[size_t(bh) * T + wq0 + r] = acc;
      rd[0] = __shfl_sync(0xffffffffu, acc, 2 * g);
      rd[1] = __shfl_sync(0xffffffffu, acc, 2 * (g + 8));
    }
    const int k0 = kt * kTileRows;
    if (k0 <= wq0) {
      fence_regs(s);
      fence_regs(dp);
      fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mma_ss<0, 0>(s, desc_k(myQ, kk), desc_k(sK + buf, kk), kk > 0);  // S = Q·Kᵀ
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mma_ss<0, 0>(dp, desc_k(mydO, kk), desc_k(sV + buf, kk), kk > 0);  // dP = dO·Vᵀ
      commit();
      wait<0>();
      fence_regs(s);
      fence_regs(dp);
      const bool diag = k0 == wq0;
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const int j = i / 4, e = i % 4;
        float pv = ex2(fmaf(s[i], sl2, -rl[e >> 1]));
        if (diag && j * 8 + 2 * t + (e & 1) > warp * 16 + g + (e >> 1) * 8) pv = 0.f;
        dp[i] = pv * (dp[i] - rd[e >> 1]);  // dS
      }
      uint32_t da[4][4];
      to_a(da, dp);
      fence_regs(dq);
      fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) mma_rs<1>(dq, da[kk], desc_mn(sK + buf, kk), true);  // dQ += dS·K
      commit();
      wait<0>();
      fence_regs(dq);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = wq0 + warp * 16 + g + 8 * i;
    if (q >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + q) * ld + size_t(h) * kHS;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      *reinterpret_cast<uint32_t*>(dst + j * 8 + 2 * t) =
          pack(dq[4 * j + 2 * i] * scale, dq[4 * j + 2 * i + 1] * scale);
  }
  if (bias_partial) {  // T % 64 == 0: the warpgroup's rows are one chunk of B·T
    const int chunk = (b * T + wq0) / 64;
    store_column_sums(wq0 < T ? bias_partial + size_t(chunk) * ld + size_t(h) * kHS : nullptr, dq,
                      scale, wg, warp, g, t);
  }
#endif
}

// ---- Backward, dK and dV: one block per 64·NWG keys, streaming 64-query Q and dO tiles (and
// their lse, D). Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ from shared memory, so Pᵀ and dSᵀ are register A
// operands of dV += Pᵀ·dO and dK += dSᵀ·Q.
template <int NWG, int MINB>
__global__ void __launch_bounds__(NWG * 128, MINB)
    flash_backward_dkdv_sm90_kernel(bf16* dqkv, float* bias_partial, const bf16* dout,
                                    const bf16* qkv, const float* lse, const float* Dg, int T,
                                    int C, int NH, float sl2, float scale) {
#ifdef GPT_SM90_WGMMA
  constexpr int NT = NWG * 128, BN = 64 * NWG;
  const uint32_t sK = smem_base(), sV = sK + NWG * kTileBytes, sQ = sV + NWG * kTileBytes;
  const uint32_t sdO = sQ + 2 * kTileBytes, sLD = sdO + 2 * kTileBytes;  // sLD: [2][lse, D][64]
  extern __shared__ __align__(16) unsigned char smem[];
  const float* LD = reinterpret_cast<const float*>(smem + (sLD - smem_addr(smem)));
  const int bh = blockIdx.y, kb = blockIdx.x;  // the first key blocks see the most queries
  const int b = bh / NH, h = bh % NH;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * kHS;
  const bf16* dbase = dout + size_t(b) * T * C + size_t(h) * kHS;
  const float* lrow = lse + size_t(bh) * T;
  const float* drow = Dg + size_t(bh) * T;
  const int key0 = kb * BN, wk0 = key0 + wg * 64;
  const int qt0 = key0 / kTileRows, nq = (T + kTileRows - 1) / kTileRows;
  const uint32_t myK = sK + wg * kTileBytes, myV = sV + wg * kTileBytes;

  auto load_q = [&](int qt, int bi) {
    load_tile<kTileRows, NT>(sQ + bi * kTileBytes, base, ld, qt * kTileRows, T);
    load_tile<kTileRows, NT>(sdO + bi * kTileBytes, dbase, C, qt * kTileRows, T);
    for (int i = threadIdx.x; i < 2 * kTileRows; i += NT) {
      const int j = i % kTileRows, q = qt * kTileRows + j;
      const bool ok = q < T;
      const float* src = i < kTileRows ? lrow : drow;
      cp_async4(sLD + 4 * (bi * 2 * kTileRows + i), ok ? src + q : src, ok);
    }
  };
  load_tile<BN, NT>(sK, base + C, ld, key0, T);
  load_tile<BN, NT>(sV, base + 2 * C, ld, key0, T);
  load_q(qt0, 0);
  cp_async_commit();

  float dk[32], dv[32], s[32], dp[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) dk[i] = dv[i] = s[i] = dp[i] = 0.f;

  for (int qt = qt0; qt < nq; ++qt) {
    const int bi = (qt - qt0) & 1;
    const bool more = qt + 1 < nq;
    if (more) {
      load_q(qt + 1, bi ^ 1);
      cp_async_commit();
    }
    tile_ready(more);
    const int q0 = qt * kTileRows;
    if (q0 >= wk0) {  // some query of the tile sees some key of the warpgroup
      const uint32_t cQ = sQ + bi * kTileBytes, cdO = sdO + bi * kTileBytes;
      const float* cL = LD + bi * 2 * kTileRows;
      const float* cD = cL + kTileRows;
      fence_regs(s);
      fence_regs(dp);
      fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mma_ss<0, 0>(s, desc_k(myK, kk), desc_k(cQ, kk), kk > 0);  // Sᵀ = K·Qᵀ
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mma_ss<0, 0>(dp, desc_k(myV, kk), desc_k(cdO, kk), kk > 0);  // dPᵀ = V·dOᵀ
      commit();
      wait<0>();
      fence_regs(s);
      fence_regs(dp);
      const bool msk = q0 == wk0 || q0 + kTileRows > T;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int ql = j * 8 + 2 * t;
        const float2 L = *reinterpret_cast<const float2*>(cL + ql);
        const float2 D = *reinterpret_cast<const float2*>(cD + ql);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = 4 * j + e;
          const int q = q0 + ql + (e & 1), key = wk0 + warp * 16 + g + (e >> 1) * 8;
          float pv = ex2(fmaf(s[i], sl2, -((e & 1) ? L.y : L.x)));
          if (msk && (q < key || q >= T)) pv = 0.f;
          s[i] = pv;                                      // Pᵀ
          dp[i] = pv * (dp[i] - ((e & 1) ? D.y : D.x));   // dSᵀ
        }
      }
      uint32_t pa[4][4], da[4][4];
      to_a(pa, s);
      to_a(da, dp);
      fence_regs(dv);
      fence_regs(dk);
      fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) mma_rs<1>(dv, pa[kk], desc_mn(cdO, kk), true);  // dV += Pᵀ·dO
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) mma_rs<1>(dk, da[kk], desc_mn(cQ, kk), true);  // dK += dSᵀ·Q
      commit();
      wait<0>();
      fence_regs(dv);
      fence_regs(dk);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int key = wk0 + warp * 16 + g + 8 * i;
    if (key >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + key) * ld + size_t(h) * kHS;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int d = j * 8 + 2 * t;
      *reinterpret_cast<uint32_t*>(dst + C + d) =
          pack(dk[4 * j + 2 * i] * scale, dk[4 * j + 2 * i + 1] * scale);
      *reinterpret_cast<uint32_t*>(dst + 2 * C + d) = pack(dv[4 * j + 2 * i], dv[4 * j + 2 * i + 1]);
    }
  }
  if (bias_partial) {
    float* dst = wk0 < T ? bias_partial + size_t((b * T + wk0) / 64) * ld + size_t(h) * kHS : nullptr;
    if constexpr ((2 * NWG + 4) * kTileBytes >= 2 * NWG * kSumTileBytes) {  // both tiles at once
      store_column_sums(dst ? dst + C : nullptr, dk, scale, wg, warp, g, t,
                        dst ? dst + 2 * C : nullptr, &dv, 1.0f);
    } else {
      store_column_sums(dst ? dst + C : nullptr, dk, scale, wg, warp, g, t);
      store_column_sums(dst ? dst + 2 * C : nullptr, dv, 1.0f, wg, warp, g, t);
    }
  }
#endif
}

// Launches: grid (row or key blocks, B·NH), so the blocks in flight at a time cover a few heads
// whose K and V (or Q and dO) stay in L2 while every block of the head reads them; ordering all
// heads' longest blocks first re-read them from DRAM about twice over.
template <class Kernel>
void set_smem(Kernel kernel, size_t bytes) {
  GPT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
}

// Shared bytes of `tiles` swizzled tiles plus `extra`, with room to align to 1024.
size_t tile_smem(int tiles, size_t extra = 0) { return size_t(tiles) * kTileBytes + extra + 1024; }

template <int NWG, int MINB>
void launch_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH,
                    float sl2) {
  const size_t smem = tile_smem(NWG + 4);
  auto kernel = flash_forward_sm90_kernel<NWG, MINB>;
  set_smem(kernel, smem);
  const dim3 grid(ceil_div(T, 64 * NWG), B * NH);
  kernel<<<grid, NWG * 128, smem, stream()>>>(out, lse, qkv, T, C, NH, sl2);
  GPT_CUDA_CHECK_LAUNCH();
}

template <int NWG, int MINB>
void launch_backward_dq(bf16* dqkv, float* D, float* bias_partial, const bf16* dout,
                        const bf16* qkv, const bf16* out, const float* lse, int B, int T, int C,
                        int NH, float sl2, float scale) {
  static_assert((3 * NWG + 4) * kTileBytes >= NWG * kSumTileBytes, "column sums fit the tiles");
  const size_t smem = tile_smem(3 * NWG + 4);
  auto kernel = flash_backward_dq_sm90_kernel<NWG, MINB>;
  set_smem(kernel, smem);
  const dim3 grid(ceil_div(T, 64 * NWG), B * NH);
  kernel<<<grid, NWG * 128, smem, stream()>>>(dqkv, D, bias_partial, dout, qkv, out, lse, T, C,
                                               NH, sl2, scale);
  GPT_CUDA_CHECK_LAUNCH();
}

template <int NWG, int MINB>
void launch_backward_dkdv(bf16* dqkv, float* bias_partial, const bf16* dout, const bf16* qkv,
                          const float* lse, const float* D, int B, int T, int C, int NH, float sl2,
                          float scale) {
  static_assert((2 * NWG + 4) * kTileBytes >= NWG * kSumTileBytes, "column sums fit the tiles");
  const size_t smem = tile_smem(2 * NWG + 4, 4 * kTileRows * sizeof(float));
  auto kernel = flash_backward_dkdv_sm90_kernel<NWG, MINB>;
  set_smem(kernel, smem);
  const dim3 grid(ceil_div(T, 64 * NWG), B * NH);
  kernel<<<grid, NWG * 128, smem, stream()>>>(dqkv, bias_partial, dout, qkv, lse, D, T, C, NH,
                                               sl2, scale);
  GPT_CUDA_CHECK_LAUNCH();
}

// Holds a static shared array only in the sm_90a pass, so its attributes tell whether the code
// that would run on this device has the wgmma kernels (and not an empty body from another pass).
__global__ void sm90_build_probe() {
#ifdef GPT_SM90_WGMMA
  volatile __shared__ int marker[64];
  marker[threadIdx.x % 64] = int(threadIdx.x);
#endif
}

bool built_for_sm90a() {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, sm90_build_probe) != cudaSuccess) {
    (void)cudaGetLastError();  // no loadable image for this device
    return false;
  }
  return attr.sharedSizeBytes > 0;
}

}  // namespace
}  // namespace gpt::cuda::sm90

namespace gpt::cuda {

using namespace sm90;

bool flash_sm90_available() {
  // Asked once per device (the attention launches call this on every step that is not a graph
  // replay): 0 unknown, 1 no, 2 yes.
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (dev < kDevices && known[dev].load(std::memory_order_relaxed) != 0)
    return known[dev].load(std::memory_order_relaxed) == 2;
  int major = 0, minor = 0;
  GPT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  GPT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  const bool yes = major == 9 && minor == 0 && built_for_sm90a();  // the image for this device
  if (dev < kDevices) known[dev].store(yes ? 2 : 1, std::memory_order_relaxed);
  return yes;
}

void flash_sm90_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH,
                        float sl2) {
  launch_forward<GPT_FLASH90_FWD_CFG>(out, lse, qkv, B, T, C, NH, sl2);
}

void flash_sm90_backward(bf16* dqkv, float* D, float* bias_partial, const bf16* dout,
                         const bf16* qkv, const bf16* out, const float* lse, int B, int T, int C,
                         int NH, float sl2, float scale) {
  // dQ first: it also writes D, which dK/dV reads.
  launch_backward_dq<GPT_FLASH90_DQ_CFG>(dqkv, D, bias_partial, dout, qkv, out, lse, B, T, C, NH,
                                         sl2, scale);
  launch_backward_dkdv<GPT_FLASH90_KV_CFG>(dqkv, bias_partial, dout, qkv, lse, D, B, T, C, NH, sl2,
                                           scale);
}

}  // namespace gpt::cuda
