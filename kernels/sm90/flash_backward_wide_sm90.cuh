// The fused flash attention backward at head sizes 96 and 128 on Hopper (included by
// flash_attention_sm90.cu): dQ, dK and dV in one pass, 128 keys a block. Head size 64 keeps the
// one-warpgroup kernel of flash_attention_sm90.cu.
//
// A block has two MMA warpgroups, one per 64-key half, and a third whose first warp adds dQ (the
// rest of it leaves at once, its registers going to the other two: 240 a thread). The MMA
// warpgroups stream the 64-query tiles from the block's first diagonal tile on (Q and dO through
// a double buffer that thread 0 fills with bulk tensor copies, lse by cp.async): Sᵀ = K·Qᵀ and
// dPᵀ = V·dOᵀ from shared memory, Pᵀ and dSᵀ from them in registers, dSᵀ into shared memory,
// then dV += Pᵀ·dO and dK += dSᵀ·Q (Pᵀ and dSᵀ from registers) and the tile's dQ contribution
// dS·K over the block's 128 keys (at head size 128 each warpgroup 64 of its columns). That goes
// to a double-buffered fp32 tile in shared memory, which the dQ warp adds to the query tile's
// accumulator in global memory with one bulk reduction (cp.reduce.async.bulk): the MMA
// warpgroups never wait for those additions or their order.
// Blocks start in backward_block's order, so a block only waits for blocks above it in its head,
// started before it (the interleaved last heads within backward_tail_heads' bound), as in the
// 64-key kernel.
//  - 128 keys a block halve the accumulator traffic of 64-key blocks, which was most of the time
//    that kernel lost at head size 128.
//  - Order: the contributions to a query tile are added key block by key block from its diagonal
//    block down (the diagonal block stores, the others add once the tile's counter says the block
//    above has), so the sums are the same on every run. A block raises a tile's counter as soon
//    as its bulk reduction has completed: each tile's additions form a chain as long as its key
//    blocks, and raising it a tile later cost 12% of the kernel at 1.3B.
//  - D = rowsum(dO ∘ O) of the block's two diagonal query tiles is computed at its start (times
//    1 − p under dropout: transposed_softmax_grad), published by a flag per tile and copied in by
//    the blocks below with the tile before.
//  - dQ in bf16 (and its bias sums) comes from the accumulator after the kernel (dq_finish).
//  - Head size 96 uses a tile and a half per 64 rows (the second tile's first 32 columns), six
//    k-steps over the head and 96-wide dK, dV and dQ products: each warpgroup's dQ part covers
//    its own 64 keys (a 96-wide product cannot start at column 48 of a swizzled tile), and
//    warpgroup 1 adds its part to warpgroup 0's in the buffer.
#pragma once

#include <cuda.h>

#include "kernels/flash_dropout.cuh"
#include "kernels/sm90/flash_sm90_common.cuh"
#include "kernels/sm90/tensor_map.h"

namespace gpt::cuda::sm90 {
namespace {

constexpr int kWideKeys = 128;                       // keys a block: 64 per MMA warpgroup
constexpr int kWideMmaThreads = 256;                 // the two MMA warpgroups
constexpr int kWideThreads = kWideMmaThreads + 128;  // and the one whose first warp adds dQ
constexpr int kDqBarThreads = kWideMmaThreads + 32;  // the MMA warpgroups and the dQ warp

// One 64-row dQ tile of head size HS in fp32 (the accumulator's tile and a shared buffer).
template <int HS>
constexpr uint32_t dq_tile_bytes() {
  return uint32_t(kTileRows) * HS * 4;
}
// K and V (4 tiles each), two stages of Q and dO (4 tiles each), dSᵀ (2 tiles), two dQ buffers,
// two stages of lse and D (64 floats each), the copy barriers of the two stages and of K and V.
template <int HS>
constexpr size_t wide_smem() {
  return 18 * size_t(kTileBytes) + 2 * size_t(dq_tile_bytes<HS>()) + 4 * kTileRows * 4 + 3 * 8;
}
static_assert(16 * size_t(kTileBytes) >= 4 * size_t(kSumTileBytes),
              "the column sums of both warpgroups fit where K and V were");

// Named barriers: the MMA warpgroups among themselves; a dQ buffer filled (the warpgroups arrive,
// the dQ warp waits) and emptied (the other way), one each per buffer; each warpgroup alone;
// warpgroup 0's dQ part in (head size 96: warpgroup 0 arrives, 1 waits).
// 0, __syncthreads, only once the copy barriers are initialised (the dQ warp runs a loop of its
// own).
constexpr int kBarMma = 1, kBarFull = 2, kBarEmpty = 4, kBarHalf = 6, kBarHandoff = 8;

#ifdef GPT_SM90_WGMMA

__device__ __forceinline__ void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
struct MmaSync {
  __device__ void operator()() const { bar_sync(kBarMma, kWideMmaThreads); }
};

// The column sums of an HS-wide accumulator (rows of this warpgroup's 64) into dst[0, HS): its
// first 64 columns and the rest, staged in `tiles` (two staged tiles).
template <int HS>
__device__ __forceinline__ void store_wide_column_sums(float* tiles, float* dst,
                                                       const float (&acc)[HS / 2], float mul,
                                                       int warp, int g, int t) {
  float lo[32], hi[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    lo[i] = acc[i];
    hi[i] = 32 + i < HS / 2 ? acc[32 + i] : 0.f;
  }
  store_column_sums(tiles, dst, lo, mul, warp, g, t, dst ? dst + 64 : nullptr, &hi, mul, HS - 64,
                    MmaSync{});
}

#endif  // GPT_SM90_WGMMA

template <int HS, bool DROP>
__global__ void __launch_bounds__(kWideThreads, 1)
    flash_backward_wide_sm90_kernel(const __grid_constant__ CUtensorMap map_qkv,
                                    const __grid_constant__ CUtensorMap map_dout, float* dq_acc,
                                    float* Dg, bf16* dqkv, float* bias_partial, int* flags,
                                    const bf16* dout, const bf16* out, const float* lse, int T,
                                    int C, int NH, float sl2, float scale, int tail_heads,
                                    flash::Dropout dr) {
#ifdef GPT_SM90_WGMMA
  static_assert(HS == 96 || HS == 128, "head size 96 or 128");
  constexpr int NT = kWideMmaThreads;
  constexpr uint32_t kDqBytes = dq_tile_bytes<HS>();
  constexpr uint32_t kHalf = 2 * kTileBytes;  // 64 rows of the head: a tile pair
  constexpr uint32_t kStage = 2 * kHalf;      // Q and dO of one query tile
  // [K: 2 halves][V: 2 halves][Q dO]×2 [dSᵀ: 2 halves][dQ]×2 [lse, D]×2 [copy barriers]
  const uint32_t sK = smem_base(), sV = sK + 2 * kHalf, sBuf = sV + 2 * kHalf;
  const uint32_t sdS = sBuf + 2 * kStage, sdQ = sdS + 2 * kTileBytes;
  const uint32_t sL = sdQ + 2 * kDqBytes;
  // Q and dO of stage 0 and 1, then K and V: each filled by the copy engine, its phase completing
  // once the bytes have landed (thread 0 arms it with the copies)
  const uint32_t sBar = sL + 4 * kTileRows * 4, sBarKV = sBar + 16;
  init_copy_barriers(sBar, 3);  // the only block-wide barrier: the dQ warp has a loop of its own
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* gen = smem - smem_addr(smem);  // generic pointer of shared address 0
  const int nq = (T + kTileRows - 1) / kTileRows;
  const int2 block = backward_block(tail_heads);
  const int bh = block.x, kb = block.y;
  const int q_first = 2 * kb, steps = nq - q_first;  // query tiles from the first diagonal one
  int* counts = flags + size_t(bh) * nq;               // key blocks added, per query tile
  int* d_ready = flags + size_t(gridDim.y + bh) * nq;  // D written, per query tile

  // ---- The dQ warp: per query tile, waits for the warpgroups' buffer and (unless this block is
  // the tile's diagonal block, which stores) for the block above to have added its part, adds the
  // buffer to the tile's accumulator, and raises the tile's counter once that is complete.
  if (threadIdx.x >= NT) {
    tma::set_max_registers_dec<24>();
    if (threadIdx.x >= kDqBarThreads) return;
    const int lane = threadIdx.x % 32;
    float* acc_tiles = dq_acc + size_t(bh) * nq * (kDqBytes / 4);
    for (int step = 0; step < steps; ++step) {
      const int qt = q_first + step, bi = step & 1;
      bar_sync(kBarFull + bi, kDqBarThreads);
      if (lane == 0) {
        const int above = qt / 2 - kb;  // key blocks that add to the tile before this one
        float* dst = acc_tiles + size_t(qt) * (kDqBytes / 4);
        const uint32_t src = sdQ + bi * kDqBytes;
        if (above == 0) {
          tma::store_1d(dst, src, kDqBytes);
        } else {
          wait_count(counts + qt, above);
          tma::fence_proxy_global();
          tma::add_1d(dst, src, kDqBytes);
        }
        tma::store_commit();
        // The counter goes up as soon as the addition is complete: the blocks below wait for it,
        // in a chain as long as the tile's key blocks.
        tma::store_wait_all();
        tma::fence_proxy_global();
        publish_count(counts + qt, above + 1);
      }
      __syncwarp();
      if (step + 2 < steps) bar_arrive(kBarEmpty + bi, kDqBarThreads);
    }
    return;
  }

  // ---- The MMA warpgroups.
  tma::set_max_registers_inc<240>();
  const int b = bh / NH, h = bh % NH;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const size_t ld = 3 * size_t(C);
  const size_t ooff = size_t(b) * T * C + size_t(h) * HS;
  const float* lrow = lse + size_t(bh) * T;
  float* drow = Dg + size_t(bh) * nq * kTileRows;  // D, padded to whole tiles
  const int key0 = kb * kWideKeys, keyw = key0 + 64 * wg;  // the block's, the warpgroup's keys
  float* L = reinterpret_cast<float*>(gen + sL);
  const MmaSync sync;
  // attention dropout: the groups of key rows g (and g + 8) of the warp's 16
  [[maybe_unused]] const AttentionColumn drop_col =
      DROP ? attention_column(dr.key.get(), dr.heads.model_bh(bh, NH), keyw + warp * 16 + g)
           : AttentionColumn{};
  // dropout's rkeep, left out of the tiles' arithmetic (transposed_softmax_grad), on dK and dV
  // here and on dQ in dq_finish
  const float rk = DROP ? dr.rkeep : 1.f, dscale = scale * rk;

  // Rows [row0, row0 + 64) of the head's columns from column col0 of map (q, k or v of qkv at
  // col0 0, C or 2C; dO at 0) into the tile pair at dst, by thread 0, counted on barrier bar. At
  // head size 96 the second tile takes 64 columns too, of which the products read 32.
  const auto load_half = [&](uint32_t dst, const CUtensorMap* map, int col0, int row0,
                             uint32_t bar) {
    load_tiles<2>(dst, map, col0 + h * HS, row0, b, bar);
  };
  const auto load_q = [&](int qt, int bi) {
    if (threadIdx.x == 0) {
      const uint32_t dst = sBuf + bi * kStage, bar = sBar + 8 * bi;
      tma::bar_arrive_expect(bar, kStage);
      load_half(dst, &map_qkv, 0, qt * kTileRows, bar);
      load_half(dst + kHalf, &map_dout, 0, qt * kTileRows, bar);
    }
    if (threadIdx.x < kTileRows) {
      const int q = qt * kTileRows + threadIdx.x;
      cp_async4(sL + 4 * (bi * 2 * kTileRows + threadIdx.x), q < T ? lrow + q : lrow, q < T);
    }
  };
  if (threadIdx.x == 0) {
    tma::bar_arrive_expect(sBarKV, 4 * kHalf);
#pragma unroll
    for (int kh = 0; kh < 2; ++kh) {
      load_half(sK + kh * kHalf, &map_qkv, C, key0 + 64 * kh, sBarKV);
      load_half(sV + kh * kHalf, &map_qkv, 2 * C, key0 + 64 * kh, sBarKV);
    }
  }
  load_q(q_first, 0);
  cp_async_commit();
  {  // D of the block's two diagonal tiles (row r of tile q_first + r / 64) into their stages
    const int r = threadIdx.x / 2, q = q_first * kTileRows + r;
    const float d = row_dot_global<HS>(q < T ? dout + ooff + size_t(q) * C : nullptr,
                                       q < T ? out + ooff + size_t(q) * C : nullptr, lane) *
                    (DROP ? dr.keep : 1.f);
    if (lane % 2 == 0 && q < nq * kTileRows) {
      drow[q] = d;  // rows past T: zeros
      L[(r / kTileRows) * 2 * kTileRows + kTileRows + r % kTileRows] = d;
    }
    sync();
    if (threadIdx.x < 2 && q_first + threadIdx.x < nq)
      publish_count(d_ready + q_first + threadIdx.x, 1);
  }

  // dK and dV of this warpgroup's keys; s and dp hold Sᵀ and dPᵀ, then at head size 128 s this
  // warpgroup's 64 columns of the dQ contribution.
  float dk[HS / 2], dv[HS / 2], s[32], dp[32];
  [[maybe_unused]] float dq[HS / 2];  // head size 96: this warpgroup's keys' dQ contribution
#pragma unroll
  for (int i = 0; i < 32; ++i) s[i] = dp[i] = 0.f;
#pragma unroll
  for (int i = 0; i < HS / 2; ++i) dk[i] = dv[i] = 0.f;

  for (int step = 0; step < steps; ++step) {
    const int qt = q_first + step, bi = step & 1;
    const bool more = step + 1 < steps;
    // Tile qt in (and its D); past this barrier both warpgroups are done with the last step, so
    // the next tile's copies may go into the stage that step read.
    cp_async_wait<0>();
    fence_smem();
    sync();
    if (step == 0) tma::bar_wait(sBarKV, 0);
    tma::bar_wait(sBar + 8 * bi, (step >> 1) & 1);
    if (more) {
      load_q(qt + 1, bi ^ 1);
      cp_async_commit();
    }
    const int q0 = qt * kTileRows;
    const uint32_t cQ = sBuf + bi * kStage, cdO = cQ + kHalf;
    const float* cL = L + bi * 2 * kTileRows;
    const float* cD = cL + kTileRows;
    fence_regs(s);
    fence_regs(dp);
    fence();
    head_product<HS>(s, sK + wg * kHalf, cQ);    // Sᵀ
    head_product<HS>(dp, sV + wg * kHalf, cdO);  // dPᵀ
    commit();
    // Head size 128: the tile's mask words hashed while the products run (at 96, and in the
    // other kernels, the words hashed at the softmax are faster).
    [[maybe_unused]] uint64_t words[4][2];
    if constexpr (DROP && HS == 128)
      flash::held_words<8>(words, drop_col, q0 + 2 * t);
    // The next tile's D into its stage (warp 0), once published (this block's second diagonal
    // tile has it already).
    if (more && threadIdx.x < 32) {
      if ((qt + 1) / 2 != kb) {
        if (lane == 0) wait_count(d_ready + qt + 1, 1);
        __syncwarp();
        if (lane < kTileRows / 4)
          cp_async16(sL + 4 * ((bi ^ 1) * 2 * kTileRows + kTileRows + 4 * lane),
                     drow + q0 + kTileRows + 4 * lane, true);
      }
      cp_async_commit();
    }
    wait<0>();
    fence_regs(s);
    fence_regs(dp);
    const bool msk = q0 <= keyw || q0 + kTileRows > T;  // at or before the diagonal, or past T
    const int key = keyw + warp * 16 + g;
    if constexpr (DROP && HS == 96)
      transposed_softmax_grad<true>(s, dp, cL, cD, q0, key, msk, T, t, sl2,
                                    DropWords(dr, drop_col, q0 + 2 * t));
    else if constexpr (DROP)
      transposed_softmax_grad<true>(s, dp, cL, cD, q0, key, msk, T, t, sl2, HeldWords{dr, words});
    else
      transposed_softmax_grad<false>(s, dp, cL, cD, q0, key, msk, T, t, sl2, NoDrop{});
    // Pᵀ and dSᵀ [key][query] as A fragments; dSᵀ also into this warpgroup's tile of the pair,
    // for the dQ product of both warpgroups.
    uint32_t pa[4][4], da[4][4];
    to_a(pa, s);
    to_a(da, dp);
    store_a_tile(sdS + wg * kTileBytes, da, warp, g, t);
    fence_smem();
    fence_regs(dv);
    fence_regs(dk);
    fence();
    // dV += Pᵀ·dO and dK += dSᵀ·Q, HS columns an instruction, the two chains interleaved; both A
    // operands from registers, so dK waits for no barrier on the shared dSᵀ.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      mma_rs_wide<HS, 1>(dv, pa[kk], cdO, kk);
      mma_rs_wide<HS, 1>(dk, da[kk], cQ, kk);
    }
    commit();
    // The tile's dQ contribution, dS·K over the block's 128 keys, into dQ buffer bi (in the
    // accumulator's order: float4 j of thread tid of a 64-column accumulator part at j·128 + tid,
    // the part of columns 64.. after the first), once the dQ warp has taken its contents of two
    // tiles ago.
    float4* buf = reinterpret_cast<float4*>(gen + sdQ + bi * kDqBytes) + tid;
    if constexpr (HS == 128) {  // warpgroup wg the 64 columns 64·wg..., from both dSᵀ tiles
      sync();                   // both tiles of dSᵀ are in
      fence_regs(s);
      fence();
#pragma unroll
      for (int kh = 0; kh < 2; ++kh)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          mma_ss<1, 1>(s, desc_mn(sdS + kh * kTileBytes, kk),
                       desc_mn(sK + kh * kHalf + wg * kTileBytes, kk), kh > 0 || kk > 0);
      commit();
      wait<0>();
      fence_regs(dv);
      fence_regs(dk);
      fence_regs(s);
      if (step >= 2) bar_sync(kBarEmpty + bi, kDqBarThreads);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        buf[(8 * wg + j) * 128] = make_float4(s[4 * j], s[4 * j + 1], s[4 * j + 2], s[4 * j + 3]);
    } else {  // every column over this warpgroup's keys; warpgroup 1 adds its part to 0's
      bar_sync(kBarHalf + wg, 128);  // this warpgroup's dSᵀ is in
      fence_regs(dq);
      fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mma_ss_n96<1, 1>(dq, desc_mn(sdS + wg * kTileBytes, kk), desc_mn2(sK + wg * kHalf, kk),
                         kk > 0);
      commit();
      wait<0>();
      fence_regs(dv);
      fence_regs(dk);
      fence_regs(dq);
      if (step >= 2) bar_sync(kBarEmpty + bi, kDqBarThreads);
      if (wg == 0) {
#pragma unroll
        for (int j = 0; j < HS / 8; ++j)
          buf[j * 128] = make_float4(dq[4 * j], dq[4 * j + 1], dq[4 * j + 2], dq[4 * j + 3]);
        bar_arrive(kBarHandoff, kWideMmaThreads);
      } else {
        bar_sync(kBarHandoff, kWideMmaThreads);
#pragma unroll
        for (int j = 0; j < HS / 8; ++j) {
          const float4 v = buf[j * 128];
          buf[j * 128] = make_float4(v.x + dq[4 * j], v.y + dq[4 * j + 1], v.z + dq[4 * j + 2],
                                     v.w + dq[4 * j + 3]);
        }
      }
    }
    fence_smem();
    bar_arrive(kBarFull + bi, kDqBarThreads);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int key = keyw + warp * 16 + g + 8 * i;
    if (key >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + key) * ld + size_t(h) * HS;
    store_row<HS>(dst + C, dk, i, t, dscale);
    store_row<HS>(dst + 2 * C, dv, i, t, rk);  // without dropout times 1: exact
  }
  if (bias_partial) {  // T % 64 == 0: the warpgroup's keys are one chunk; staged where K, V were
    float* dst =
        keyw < T ? bias_partial + size_t((b * T + keyw) / 64) * ld + size_t(h) * HS : nullptr;
    float* tiles = reinterpret_cast<float*>(gen + sK) + wg * 2 * kTileRows * kSumLd;
    store_wide_column_sums<HS>(tiles, dst ? dst + C : nullptr, dk, dscale, warp, g, t);
    store_wide_column_sums<HS>(tiles, dst ? dst + 2 * C : nullptr, dv, rk, warp, g, t);
  }
#endif
}

// dQ in bf16 from the accumulator, one block per query tile and head (128 threads, each the
// elements of one MMA warpgroup thread), with the bias sums of its 64-row chunk in bias_grad's
// order when bias_partial is given.
template <int HS>
__global__ void __launch_bounds__(128)
    flash_dq_finish_sm90_kernel(bf16* dqkv, float* bias_partial, const float* dq_acc, int T, int C,
                                int NH, float scale) {
#ifdef GPT_SM90_WGMMA
  const int qt = blockIdx.x, bh = blockIdx.y, b = bh / NH, h = bh % NH;
  const int tid = threadIdx.x, warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
  const float4* src = reinterpret_cast<const float4*>(
                          dq_acc + (size_t(bh) * gridDim.x + qt) * (dq_tile_bytes<HS>() / 4)) +
                      tid;
  float d0[32], d1[32];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float4 v = __ldcs(src + j * 128), u = j < (HS - 64) / 8 ? __ldcs(src + (8 + j) * 128)
                                                                  : make_float4(0, 0, 0, 0);
    d0[4 * j] = v.x, d0[4 * j + 1] = v.y, d0[4 * j + 2] = v.z, d0[4 * j + 3] = v.w;
    d1[4 * j] = u.x, d1[4 * j + 1] = u.y, d1[4 * j + 2] = u.z, d1[4 * j + 3] = u.w;
  }
  const size_t ld = 3 * size_t(C);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = qt * kTileRows + warp * 16 + g + 8 * i;
    if (q >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + q) * ld + size_t(h) * HS;
    store_row<64>(dst, d0, i, t, scale);
    store_row<HS - 64>(dst + 64, reinterpret_cast<const float(&)[(HS - 64) / 2]>(d1), i, t, scale);
  }
  if (bias_partial) {  // T % 64 == 0: the tile is one chunk of B·T
    __shared__ float tiles[2 * kTileRows * kSumLd];
    float* dst = bias_partial + size_t((b * T) / 64 + qt) * ld + size_t(h) * HS;
    store_column_sums(tiles, dst, d0, scale, warp, g, t, dst + 64, &d1, scale, HS - 64);
  }
#endif
}

template <int HS, int TAIL_HEADS, int SLOT_QUARTERS, bool DROP>
void launch_backward_wide(bf16* dqkv, float* bias_partial, const bf16* dout, const bf16* qkv,
                          const bf16* out, const float* lse, int B, int T, int C, int NH,
                          float sl2, float scale, flash::Dropout dr) {
  const size_t nq = ceil_div(T, kTileRows), tiles = size_t(B) * NH * nq;
  const int nk = ceil_div(T, kWideKeys);
  // D per head padded to whole tiles; the dQ accumulator; the counters and D flags, which start
  // at zero.
  Scratch<float> D(tiles * kTileRows), acc(tiles * (dq_tile_bytes<HS>() / 4));
  Scratch<int> flags(2 * tiles);
  GPT_CUDA_CHECK(cudaMemsetAsync(flags.get(), 0, 2 * tiles * sizeof(int), stream()));
  const size_t smem = tile_smem(0, wide_smem<HS>());
  auto kernel = flash_backward_wide_sm90_kernel<HS, DROP>;
  set_smem(kernel, smem);
  const CUtensorMap map_qkv = tensor_map_batched(qkv, B, T, 3 * C, kTileRows),
                    map_dout = tensor_map_batched(dout, B, T, C, kTileRows);
  kernel<<<dim3(unsigned(nk), B * NH), kWideThreads, smem, stream()>>>(
      map_qkv, map_dout, acc, D, dqkv, bias_partial, flags, dout, out, lse, T, C, NH, sl2, scale,
      backward_tail_heads<TAIL_HEADS, SLOT_QUARTERS>(kernel, kWideThreads, smem, B * NH, nk), dr);
  GPT_CUDA_CHECK_LAUNCH();
  flash_dq_finish_sm90_kernel<HS><<<dim3(unsigned(nq), B * NH), 128, 0, stream()>>>(
      dqkv, bias_partial, acc, T, C, NH, DROP ? scale * dr.rkeep : scale);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace gpt::cuda::sm90
