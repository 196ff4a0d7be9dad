#include "kernels/sm90/flash_attention_sm90.cuh"

#include <algorithm>

#include "kernels/flash_dropout.cuh"
#include "kernels/sm90/flash_backward_wide_sm90.cuh"
#include "kernels/sm90/flash_sm90_common.cuh"

namespace gpt::cuda::sm90 {
namespace {

#ifdef GPT_SM90_WGMMA
// The forward's (head, row tile): a row tile's work grows with its index (causal), so each head
// runs its longest rows first, and the last heads interleaved end the grid on short blocks. (All
// heads that way re-read K and V from DRAM: too many heads in flight for L2.)
__device__ __forceinline__ int2 forward_block(int tail_heads) {
  return grid_block(tail_heads, true);
}
#endif

// The forward's shared memory in 64-row tiles of the head (a part each): two stages of K, two of
// V, and Q after them at head size 64; at 96 Q lies where V's second stage goes (first written at
// step 1, once Q is in registers), and at 128 K has one stage; both leave room for a third block
// per SM.
template <int HS>
constexpr int forward_parts() {
  return HS > 64 ? 4 : 5;
}
// Head size 128: K single-buffered and Q read from shared memory by every S product, within the
// 168 registers a thread of three blocks per SM (Q in registers took 194).
template <int HS>
constexpr bool forward_single_k() {
  return HS == 128;
}

// ---- Forward: one block (one warpgroup) per 64 query rows, streaming 64-key K and V tiles.
// S = Q·Kᵀ (A, B from shared), then O += P·V with P from registers; same online softmax as the
// generic kernel. Software-pipelined within the warpgroup: step j issues S_j = Q·K_jᵀ and then
// O += P_{j-1}·V_{j-1}, and computes the softmax of S_j while the second product runs; O is
// rescaled by step j's correction once that product is done, before P_j·V_j is issued, so every
// output is the same sum in the same order as without the overlap. The copy groups follow the
// products: group j holds K_j and V_{j-1} (group 0 also Q), bulk tensor copies that thread 0
// issues one step ahead into double buffers; with K single-buffered (forward_single_k), as soon
// as every warp has S_{j-1}.
// Head size HS = 64, 96 or 128: above 64 each 64-row tile of q, k, v is a pair of 64-column
// swizzled tiles (at 96 the second one's first 32 columns), S sums both tiles' products (HS / 16
// k-steps) and O is one HS-wide accumulator. DROP: attention dropout (flash_dropout.cuh), P·V
// with the dropped P, the softmax sum and lse from the undropped one, rkeep applied with 1/l at
// the end.
template <int HS, int MINB, bool DROP>
__global__ void __launch_bounds__(128, MINB)
    flash_forward_sm90_kernel(const __grid_constant__ CUtensorMap map_qkv, bf16* out, float* lse,
                              int T, int C, int NH, float sl2, int tail_heads,
                              flash::Dropout dr) {
#ifdef GPT_SM90_WGMMA
  static_assert(HS == 64 || HS == 96 || HS == 128, "head size 64, 96 or 128");
  constexpr int NP = HS > 64 ? 2 : 1;  // swizzled tiles per row
  constexpr uint32_t kPart = NP * kTileBytes;    // one 64-row tile of the head (NP tiles)
  // Head size 96: Q as register A operands of S, loaded once, which spares every S product its
  // shared-memory reads of Q (forward_parts places it).
  constexpr bool kSingleK = forward_single_k<HS>();
  constexpr bool kQRegs = HS > 64 && !kSingleK;
  const uint32_t sK = smem_base(), sV = sK + (kSingleK ? 1 : 2) * kPart;
  const uint32_t sQ = sK + (forward_parts<HS>() - 1) * kPart;
  // The copy barriers of the groups (below): group j completes on barrier j % 2, in its phase
  // j / 2 % 2; thread 0 arms it with the group's copies.
  const uint32_t sBar = sK + forward_parts<HS>() * kPart;
  init_copy_barriers(sBar, 2);
  const int2 block = forward_block(tail_heads);
  const int bh = block.x, qb = block.y;
  const int b = bh / NH, h = bh % NH;
  const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int q0 = qb * kTileRows, nkt = qb + 1;  // key tiles 0..qb: the last is the diagonal
  // attention dropout: the groups of rows g (and g + 8) of the warp's 16
  [[maybe_unused]] const AttentionRow drop_row =
      DROP ? attention_row(dr.key.get(), dr.heads.model_bh(bh, NH), q0 + warp * 16 + g)
           : AttentionRow{};

  // Rows [row0, row0 + 64) of the head's columns from column col0 of qkv (q, k or v at 0, C or
  // 2C) into the NP tiles at dst, counted on barrier bar (thread 0). At head size 96 the second
  // tile takes 64 columns, of which the products read 32.
  const auto load_part = [&](uint32_t dst, int col0, int row0, uint32_t bar) {
    load_tiles<NP>(dst, &map_qkv, col0 + h * HS, row0, b, bar);
  };
  const auto k_stage = [&](int j) { return sK + (kSingleK ? 0 : (j & 1) * kPart); };
  const auto group_bar = [&](int j) { return sBar + 8 * (j & 1); };
  const auto issue = [&](int j) {  // group j: K_j, V_{j-1} (group 0 also Q)
    if (threadIdx.x == 0) {
      const uint32_t bar = group_bar(j);
      tma::bar_arrive_expect(bar, uint32_t((j == 0) + (j < nkt) + (j > 0)) * kPart);
      if (j == 0) load_part(sQ, 0, q0, bar);
      if (j < nkt) load_part(k_stage(j), C, j * kTileRows, bar);
      if (j > 0) load_part(sV + ((j - 1) & 1) * kPart, 2 * C, (j - 1) * kTileRows, bar);
    }
  };
  issue(0);

  float o[HS / 2], s[32], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, corr[2];
  uint32_t pa[4][4];
#pragma unroll
  for (int i = 0; i < 32; ++i) s[i] = 0.f;
#pragma unroll
  for (int i = 0; i < HS / 2; ++i) o[i] = 0.f;
  const auto fence_o = [&] { fence_regs(o); };

  // Group j (K_j, V_{j-1}) ready, group j + 1 issued into the buffers that K_{j-1} and V_{j-2}
  // left, free since the barrier that ended step j - 1 (single K: issued by next_tiles).
  const auto tiles_ready = [&](int j) {
    if (!kSingleK && j < nkt) issue(j + 1);
    tma::bar_wait(group_bar(j), (j >> 1) & 1);
    __syncthreads();
  };
  [[maybe_unused]] uint32_t qa[kQRegs ? HS / 16 : 1][4];
  const auto load_q_regs = [&] {  // once Q is in (the A layout: this warp's 16 rows)
    if constexpr (kQRegs) {
#pragma unroll
      for (int i = 0; i < HS / 16; ++i)
        ldsm_x4(qa[i], sQ + (i / 4) * kTileBytes +
                           sw128(warp * 16 + lane % 16, 2 * (i % 4) + lane / 16));
      fence_smem();  // these reads before the copy engine's V tiles where Q was (step 1 on)
    }
  };
  const auto issue_s = [&](int j) {
    if constexpr (kQRegs) {
#pragma unroll
      for (int i = 0; i < HS / 16; ++i)
        mma_rs<0>(s, qa[i], desc_k(k_stage(j) + (i / 4) * kTileBytes, i % 4), i > 0);
    } else {
      head_product<HS>(s, sQ, k_stage(j));
    }
    commit();
  };
  // Single K: once S_j is done in every warp, group j + 1 (K_{j+1} into K's one stage, V_j into
  // the stage P_{j-2}·V_{j-2} left, done before the barrier that began step j).
  const auto next_tiles = [&](int j) {
    if constexpr (kSingleK) {
      __syncthreads();
      issue(j + 1);
    }
  };
  const auto issue_pv = [&](int j) {  // O += P_j·V_j
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      if constexpr (HS == 64)
        mma_rs<1>(o, pa[kk], desc_mn(sV + (j & 1) * kPart, kk), true);
      else
        mma_rs_wide<HS, 1>(o, pa[kk], sV + (j & 1) * kPart, kk);
    }
    commit();
  };
  // The online softmax of S_j (in s, which becomes P_j in fp32, dropped under DROP): new maxima
  // m, the correction corr for O and l, l rescaled and summed. O itself is rescaled by the caller.
  const auto softmax = [&](int j) {
    if (j == qb) {  // the diagonal tile: keys after the query are masked
#pragma unroll
      for (int jj = 0; jj < 8; ++jj)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (jj * 8 + 2 * t + (e & 1) > warp * 16 + g + (e >> 1) * 8) s[4 * jj + e] = -INFINITY;
    }
    float mx[2] = {m[0], m[1]}, ms[2];
#pragma unroll
    for (int i = 0; i < 32; ++i) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s[i]);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
      corr[i] = ex2((m[i] - mx[i]) * sl2);  // first tile: ex2(-inf) = 0
      m[i] = mx[i];                         // finite: key 0 is visible to every row
      ms[i] = mx[i] * sl2;
      l[i] *= corr[i];
    }
    [[maybe_unused]] uint64_t w[4][2];
    if constexpr (DROP) flash::group_words<8>(w, drop_row, j * kTileRows + 2 * t);
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const float p = ex2(fmaf(s[i], sl2, -ms[(i >> 1) & 1]));
      s[i] = p;
      l[(i >> 1) & 1] += p;  // the softmax sum: before dropout
      if constexpr (DROP)
        if (!flash::keep_bit<false>(dr, w, i >> 2, i & 3)) s[i] = 0.f;
    }
  };
  const auto rescale_o = [&] {
#pragma unroll
    for (int i = 0; i < HS / 2; ++i) o[i] *= corr[(i >> 1) & 1];
    to_a(pa, s);
  };

  tiles_ready(0);  // step 0: S_0 only
  load_q_regs();
  fence_regs(s);
  fence();
  issue_s(0);
  wait<0>();
  fence_regs(s);
  next_tiles(0);
  softmax(0);
  rescale_o();
  if constexpr (!kSingleK) __syncthreads();
  for (int j = 1; j < nkt; ++j) {
    tiles_ready(j);
    fence_regs(s);
    fence_o();
    fence();
    issue_s(j);
    issue_pv(j - 1);
    wait<1>();  // S_j done; P_{j-1}·V_{j-1} may still run
    fence_regs(s);
    next_tiles(j);
    softmax(j);
    wait<0>();
    fence_o();
    rescale_o();
    // everyone is done with the buffers of K_j and V_{j-1} (single K: the next step's first
    // barrier, before next_tiles writes them)
    if constexpr (!kSingleK) __syncthreads();
  }
  tiles_ready(nkt);  // the last step: P_{nkt-1}·V_{nkt-1} only
  fence_o();
  fence();
  issue_pv(nkt - 1);
  wait<0>();
  fence_o();
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float li = l[i];
    li += __shfl_xor_sync(0xffffffffu, li, 1);
    li += __shfl_xor_sync(0xffffffffu, li, 2);
    const int q = q0 + warp * 16 + g + 8 * i;
    if (q >= T) continue;
    const float inv = DROP ? dr.rkeep / li : 1.0f / li;
    bf16* dst = out + (size_t(b) * T + q) * C + size_t(h) * HS;
    store_row<HS>(dst, o, i, t, inv);
    if (t == 0) lse[size_t(bh) * T + q] = m[i] * sl2 + log2f(li);
  }
#endif
}

// ---- Backward, fused: dQ, dK and dV in one pass. One block (one warpgroup) per 64 keys, streaming
// the 64-query tiles at and after the diagonal (Q and dO through a cp.async double buffer). Per
// tile: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ from shared memory, so Pᵀ and dSᵀ are register A operands of
// dV += Pᵀ·dO and dK += dSᵀ·Q; and the tile's dQ contribution dS·K, with dSᵀ staged in shared
// memory (both operands MN-major). Blocks of a head start highest key tile first (launch
// order), so every block that another waits for below has started earlier: no deadlock; the
// last heads start longest first, within a bound on the blocks in flight (backward_block).
//  - D = rowsum(dO ∘ O) of query tile i is computed once, by the diagonal block of key tile i
//    (its first tile; O is read only there), written to Dg and published by a flag; the blocks
//    below copy it in with the tile before (the flag is long set by then, but checked).
//  - The contributions to a query tile are summed in a fixed order, key tiles from the diagonal
//    down, in an fp32 accumulator in global memory (it stays in L2): the diagonal block stores its
//    part, each block below adds its own (red.add) once the tile's counter says the block above
//    has, and key tile 0, the last, reads the sum, adds its part and stores dQ in bf16 (with its
//    bias sums). A block raises a counter one tile late, while its next products run, so the
//    fence that publishes its additions is not waited for on the way; at the same pace the block
//    above is a tile ahead, so the waits are rarely felt.
// Deterministic: the same additions in the same order on every run. Head size 64 only: wider
// heads take flash_backward_wide_sm90.cuh, whose 128-key blocks halve these additions.
// DROP: attention dropout (flash_dropout.cuh), regenerated per tile: dV from the dropped Pᵀ,
// dSᵀ = Pᵀ ∘ (Z ∘ dPᵀ − D), with D·(1 − p) in the tiles and rkeep on the stored dQ, dK and dV
// (transposed_softmax_grad).
template <int MINB, bool DROP>
__global__ void __launch_bounds__(128, MINB)
    flash_backward_fused_sm90_kernel(bf16* dqkv, float* Dg, float* bias_partial, float* dq_acc,
                                     int* flags, const bf16* dout, const bf16* qkv,
                                     const bf16* out, const float* lse, int T, int C, int NH,
                                     float sl2, float scale, int tail_heads, flash::Dropout dr) {
#ifdef GPT_SM90_WGMMA
  constexpr int HS = 64, NT = 128;
  constexpr uint32_t kStage = 2 * kTileBytes;  // one stage of the double buffer: Q, dO
  // [K][V][Q dO]×2 [dSᵀ (O of the diagonal tile before the first dSᵀ)][lse, D]×2
  const uint32_t sK = smem_base(), sV = sK + kTileBytes, sBuf = sV + kTileBytes;
  const uint32_t sdS = sBuf + 2 * kStage, sL = sdS + kTileBytes;
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* gen = smem - smem_addr(smem);  // generic pointer of shared address 0
  float* L = reinterpret_cast<float*>(gen + sL);
  const int nq = (T + kTileRows - 1) / kTileRows;
  const int2 block = backward_block(tail_heads);
  const int bh = block.x, kb = block.y;
  const int b = bh / NH, h = bh % NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const size_t ld = 3 * size_t(C);
  const bf16* base = qkv + size_t(b) * T * ld + size_t(h) * HS;
  const size_t ooff = size_t(b) * T * C + size_t(h) * HS;
  const float* lrow = lse + size_t(bh) * T;
  float* drow = Dg + size_t(bh) * nq * kTileRows;  // D, padded to whole tiles
  const int key0 = kb * kTileRows;
  float* acc_tiles = dq_acc + size_t(bh) * nq * kTileRows * HS + threadIdx.x * 4;
  int* counts = flags + size_t(bh) * nq;              // dQ contributions added, per query tile
  int* d_ready = flags + size_t(gridDim.y + bh) * nq;  // D written, per query tile
  // attention dropout: the groups of key rows g (and g + 8) of the warp's 16
  [[maybe_unused]] const AttentionColumn drop_col =
      DROP ? attention_column(dr.key.get(), dr.heads.model_bh(bh, NH), key0 + warp * 16 + g)
           : AttentionColumn{};
  // dropout's rkeep, left out of the tiles' arithmetic (transposed_softmax_grad), on dQ, dK, dV
  const float rk = DROP ? dr.rkeep : 1.f, dscale = scale * rk;

  auto load_q = [&](int qt, int bi) {
    const uint32_t dst = sBuf + bi * kStage;
    load_tile<kTileRows, NT>(dst, base, ld, qt * kTileRows, T);
    load_tile<kTileRows, NT>(dst + kTileBytes, dout + ooff, C, qt * kTileRows, T);
    if (threadIdx.x < kTileRows) {
      const int q = qt * kTileRows + threadIdx.x;
      cp_async4(sL + 4 * (bi * 2 * kTileRows + threadIdx.x), q < T ? lrow + q : lrow, q < T);
    }
  };
  load_tile<kTileRows, NT>(sK, base + C, ld, key0, T);
  load_tile<kTileRows, NT>(sV, base + 2 * C, ld, key0, T);
  load_tile<kTileRows, NT>(sdS, out + ooff, C, key0, T);  // diagonal O
  load_q(kb, 0);
  cp_async_commit();

  // s and dp hold Sᵀ and dPᵀ, then dp the dQ contribution.
  float dk[32], dv[32], s[32], dp[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) s[i] = dp[i] = dk[i] = dv[i] = 0.f;

  int pending = -1;  // the query tile whose counter this block raises next
  for (int qt = kb; qt < nq; ++qt) {
    const int bi = (qt - kb) & 1;
    const bool more = qt + 1 < nq;
    if (more) {
      load_q(qt + 1, bi ^ 1);
      cp_async_commit();
    }
    tile_ready(more);
    const int q0 = qt * kTileRows;
    const uint32_t cQ = sBuf + bi * kStage, cdO = cQ + kTileBytes;
    float* cL = L + bi * 2 * kTileRows;
    const float* cD = cL + kTileRows;
    if (qt == kb) {  // the diagonal tile: D of its queries for every block of the head
      const float d = row_dot(cdO, sdS, threadIdx.x / 2, lane) * (DROP ? dr.keep : 1.f);
      if (lane % 2 == 0) {
        drow[q0 + threadIdx.x / 2] = d;  // rows past T: zeros
        cL[kTileRows + threadIdx.x / 2] = d;
      }
      __syncthreads();
      if (threadIdx.x == 0) publish_count(d_ready + qt, 1);
    }
    fence_regs(s);
    fence_regs(dp);
    fence();
    head_product<64>(s, sK, cQ);    // Sᵀ
    head_product<64>(dp, sV, cdO);  // dPᵀ
    commit();
    if (pending >= 0 && threadIdx.x == 32) {  // the previous tile's additions are in (warp 1)
      publish_count(counts + pending, pending - kb + 1);
    }
    if (more && warp == 0) {  // the next tile's D, once published, into its stage (warp 0)
      if (lane == 0) wait_count(d_ready + qt + 1, 1);
      __syncwarp();
      if (lane < kTileRows / 4)
        cp_async16(sL + 4 * ((bi ^ 1) * 2 * kTileRows + kTileRows + 4 * lane),
                   drow + q0 + kTileRows + 4 * lane, true);
      cp_async_commit();  // waited for with the tile after it (tile_ready leaves one group)
    }
    wait<0>();
    fence_regs(s);
    fence_regs(dp);
    const bool msk = q0 == key0 || q0 + kTileRows > T;
    const int key = key0 + warp * 16 + g;
    if constexpr (DROP)
      transposed_softmax_grad<true>(s, dp, cL, cD, q0, key, msk, T, t, sl2,
                                    DropWords(dr, drop_col, q0 + 2 * t));
    else
      transposed_softmax_grad<false>(s, dp, cL, cD, q0, key, msk, T, t, sl2, NoDrop{});
    uint32_t pa[4][4], da[4][4];
    to_a(pa, s);
    to_a(da, dp);
    // dSᵀ [key][query] into shared memory, the MN-major A operand of dQ = dS·K.
    store_a_tile(sdS, da, warp, g, t);
    fence_smem();
    __syncthreads();
    fence_regs(dv);
    fence_regs(dk);
    fence_regs(dp);
    fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)  // dV += Pᵀ·dO
      mma_rs<1>(dv, pa[kk], desc_mn(cdO, kk), true);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)  // dK += dSᵀ·Q
      mma_rs<1>(dk, da[kk], desc_mn(cQ, kk), true);
    // This key tile's part of dQ, dS·K (dSᵀ is stored), into dp.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) mma_ss<1, 1>(dp, desc_mn(sdS, kk), desc_mn(sK, kk), kk > 0);
    commit();
    const bool first = qt == kb, last = kb == 0;
    // Each thread sees the count itself (acquire) before its additions, under the products.
    if (!first) wait_count(counts + qt, qt - kb);
    wait<0>();
    fence_regs(dv);
    fence_regs(dk);
    fence_regs(dp);
    // float4 j of this thread's part: acc + 512·j.
    float* acc = acc_tiles + size_t(qt) * kTileRows * HS;
    // The contribution (d) into the accumulator, or, in the last block, the sum so far added to
    // d.
    const auto add_dq = [&](float(&d)[32]) {
      float* a = acc;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (!last) {
          if (first)
            st_cg4(a + 512 * j, d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
          else
            red_add4(a + 512 * j, d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
        } else if (!first) {  // the others' sum, then this block's part
          const float4 v = ld_cg4(a + 512 * j);
          d[4 * j] = v.x + d[4 * j];
          d[4 * j + 1] = v.y + d[4 * j + 1];
          d[4 * j + 2] = v.z + d[4 * j + 2];
          d[4 * j + 3] = v.w + d[4 * j + 3];
        }
      }
    };
    add_dq(dp);
    if (!last) {
      pending = qt;
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int q = q0 + warp * 16 + g + 8 * i;
        if (q >= T) continue;
        bf16* dst = dqkv + (size_t(b) * T + q) * ld + size_t(h) * HS;
        store_row<64>(dst, dp, i, t, dscale);
      }
      if (bias_partial) {  // T % 64 == 0: the tile is one chunk of B·T; staged in the free stage
        float* dst = bias_partial + size_t((b * T + q0) / 64) * ld + size_t(h) * HS;
        store_column_sums(reinterpret_cast<float*>(gen + cQ), dst, dp, dscale, warp, g, t);
      }
    }
    __syncthreads();  // everyone is done with stage bi and dSᵀ before they are refilled
  }
  if (pending >= 0 && threadIdx.x == 0) {
    publish_count(counts + pending, pending - kb + 1);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int key = key0 + warp * 16 + g + 8 * i;
    if (key >= T) continue;
    bf16* dst = dqkv + (size_t(b) * T + key) * ld + size_t(h) * HS;
    store_row<64>(dst + C, dk, i, t, dscale);
    store_row<64>(dst + 2 * C, dv, i, t, rk);  // without dropout times 1: exact
  }
  if (bias_partial) {
    float* dst =
        key0 < T ? bias_partial + size_t((b * T + key0) / 64) * ld + size_t(h) * HS : nullptr;
    store_column_sums(sum_tiles(), dst ? dst + C : nullptr, dk, dscale, warp, g, t,
                      dst ? dst + 2 * C : nullptr, &dv, rk);
  }
#endif
}

// Launches: grid (row or key blocks, B·NH), so the blocks in flight at a time cover a few heads
// whose K and V (or Q and dO) stay in L2 while every block of the head reads them; ordering all
// heads' longest blocks first re-read them from DRAM about twice over; both kernels do that for
// their last heads only (forward_block, backward_block). (Interleaving the backward's last heads
// shortest first, which keeps every wait on an earlier block, was no faster.)

// The heads that forward_block interleaves at the end of the grid: enough to fill the last wave
// at every GPT-2 size, few enough that their K and V stay in L2.
constexpr int kForwardTailHeads = 48;

// The forward: forward_parts' 64-row tiles of the head, a swizzled tile per 64 columns, and the
// two copy barriers.
template <int HS, int MINB, bool DROP>
void launch_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH, float sl2,
                    flash::Dropout dr) {
  const size_t smem = tile_smem(forward_parts<HS>() * (HS > 64 ? 2 : 1), 2 * 8);
  auto kernel = flash_forward_sm90_kernel<HS, MINB, DROP>;
  set_smem(kernel, smem);
  const dim3 grid(ceil_div(T, kTileRows), B * NH);
  const CUtensorMap map_qkv = tensor_map_batched(qkv, B, T, 3 * C, kTileRows);
  kernel<<<grid, 128, smem, stream()>>>(map_qkv, out, lse, T, C, NH, sl2,
                                        std::min(B * NH, kForwardTailHeads), dr);
  GPT_CUDA_CHECK_LAUNCH();
}

// The configurations in use, the fastest of scripts/bench/flash_attention_bench.cu's sweep (which
// overrides them): __launch_bounds__ minimum blocks per SM of the forward at head sizes 64, 96
// and 128 (at 128 three with forward_single_k), and of the one-warpgroup fused backward (head
// size 64); the backward's interleaved tail heads at most, and the share of the resident blocks
// they may take, in quarters (both backward kernels).
constexpr int kForwardMinBlocks = 4, kForward96MinBlocks = 3, kForward128MinBlocks = 3;
constexpr int kFusedMinBlocks = 3;
constexpr int kBackwardTailHeads = 24, kBackwardSlotQuarters = 3;

// The one-warpgroup fused backward's shared memory: K, V, two stages of Q and dO, dSᵀ, two
// stages of lse and D.
constexpr size_t kFusedSmem = 7 * size_t(kTileBytes) + 4 * kTileRows * sizeof(float);
static_assert(kFusedSmem >= 2 * kSumTileBytes && 2 * kTileBytes >= kSumTileBytes,
              "column sums fit the tiles and one stage");

template <int MINB, int TAIL_HEADS, int SLOT_QUARTERS, bool DROP>
void launch_backward_fused(bf16* dqkv, float* bias_partial, const bf16* dout, const bf16* qkv,
                           const bf16* out, const float* lse, int B, int T, int C, int NH,
                           float sl2, float scale, flash::Dropout dr) {
  const size_t nq = ceil_div(T, kTileRows), tiles = size_t(B) * NH * nq;
  // D per head padded to whole tiles; the dQ accumulator (fp32, one 64×64 tile per query tile
  // and head, in the threads' fragment order); the counters and D flags, which start at zero.
  Scratch<float> D(tiles * kTileRows), acc(tiles * kTileRows * 64);
  Scratch<int> flags(2 * tiles);
  GPT_CUDA_CHECK(cudaMemsetAsync(flags.get(), 0, 2 * tiles * sizeof(int), stream()));
  const size_t smem = tile_smem(0, kFusedSmem);
  auto kernel = flash_backward_fused_sm90_kernel<MINB, DROP>;
  set_smem(kernel, smem);
  const dim3 grid(unsigned(nq), B * NH);
  kernel<<<grid, 128, smem, stream()>>>(dqkv, D, bias_partial, acc, flags, dout, qkv, out, lse, T,
                                        C, NH, sl2, scale,
                                        backward_tail_heads<TAIL_HEADS, SLOT_QUARTERS>(
                                            kernel, 128, smem, B * NH, int(nq)),
                                        dr);
  GPT_CUDA_CHECK_LAUNCH();
}

// Calls f.template operator()<HS, DROP>() for head size hs (64, 96 or 128) and attention dropout
// probability p (DROP: p > 0).
template <class F>
void dispatch(int hs, float p, F&& f) {
  if (hs == 128)
    p > 0.0f ? f.template operator()<128, true>() : f.template operator()<128, false>();
  else if (hs == 96)
    p > 0.0f ? f.template operator()<96, true>() : f.template operator()<96, false>();
  else
    p > 0.0f ? f.template operator()<64, true>() : f.template operator()<64, false>();
}

}  // namespace
}  // namespace gpt::cuda::sm90

namespace gpt::cuda {

using namespace sm90;

void flash_sm90_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH,
                        float sl2, float dropout, DropKey key, HeadRange heads) {
  const flash::Dropout dr =
      dropout > 0.0f ? flash::make_dropout(dropout, key, heads) : flash::Dropout{};
  dispatch(C / NH, dropout, [&]<int HS, bool DROP>() {
    constexpr int MINB =
        HS == 64 ? kForwardMinBlocks : HS == 96 ? kForward96MinBlocks : kForward128MinBlocks;
    launch_forward<HS, MINB, DROP>(out, lse, qkv, B, T, C, NH, sl2, dr);
  });
}

void flash_sm90_backward(bf16* dqkv, float* bias_partial, const bf16* dout, const bf16* qkv,
                         const bf16* out, const float* lse, int B, int T, int C, int NH,
                         float sl2, float scale, float dropout, DropKey key,
                         HeadRange heads) {
  const flash::Dropout dr =
      dropout > 0.0f ? flash::make_dropout(dropout, key, heads) : flash::Dropout{};
  dispatch(C / NH, dropout, [&]<int HS, bool DROP>() {
    if constexpr (HS == 64)
      launch_backward_fused<kFusedMinBlocks, kBackwardTailHeads, kBackwardSlotQuarters, DROP>(
          dqkv, bias_partial, dout, qkv, out, lse, B, T, C, NH, sl2, scale, dr);
    else
      launch_backward_wide<HS, kBackwardTailHeads, kBackwardSlotQuarters, DROP>(
          dqkv, bias_partial, dout, qkv, out, lse, B, T, C, NH, sl2, scale, dr);
  });
}

}  // namespace gpt::cuda
