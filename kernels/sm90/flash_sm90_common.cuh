// The device helpers that the Hopper flash attention kernels share (flash_attention_sm90.cu and
// flash_backward_wide_sm90.cuh): swizzled tile loads, accumulator stores, the qkv bias column sums,
// D = rowsum(dO ∘ O), the counters that order the dQ additions, the grid order, and the launch
// helpers. Included by flash_attention_sm90.cu only.
#pragma once

#include <cuda.h>

#include <algorithm>

#include "kernels/cuda_common.cuh"
#include "kernels/flash_dropout.cuh"
#include "kernels/mma_fragments.cuh"
#include "kernels/sm90/tma_pipeline.cuh"
#include "kernels/sm90/wgmma.cuh"
#include "kernels/smem_ptx.cuh"

namespace gpt::cuda::sm90 {
namespace {

// The qkv bias sums (below): 64-row tiles of fp32 staged in the tiles' memory, 64 floats per
// row; 8-column group c of row r is stored at group c ^ (r % 8), so neither the
// accumulator-layout writes nor the column reads meet bank conflicts.
constexpr int kSumLd = 64;
constexpr int kSumTileBytes = kTileRows * kSumLd * 4;

#ifdef GPT_SM90_WGMMA

// Rows [row0, row0 + R) of one head's [T, 64] slice (element (r, d) at src[r·ld + d]) into the
// swizzled tile at shared address dst, by NT threads with 16-byte cp.async; zeros past T. CH < 8:
// the first CH 8-column chunks of each row only (the rest of the tile is left as it is).
template <int R, int NT, int CH = 8>
__device__ __forceinline__ void load_tile(uint32_t dst, const bf16* src, size_t ld, int row0,
                                          int T) {
  constexpr int RSTEP = NT / CH;
  const int r = threadIdx.x / CH, c = threadIdx.x % CH;
#pragma unroll
  for (int k = 0; k * RSTEP < R; ++k) {
    const int row = r + k * RSTEP;
    if (R % RSTEP == 0 || row < R) {
      const bool ok = row0 + row < T;
      cp_async16(dst + sw128(row, c), ok ? src + size_t(row0 + row) * ld + c * 8 : src, ok);
    }
  }
}

// Rows [row0, row0 + 64) of columns [col, col + 64·NP) of batch b of a tensor map
// (tensor_map_batched, 64×64 boxes) into NP swizzled tiles at dst, by the calling thread,
// counted on copy barrier bar: rows past the batch's last are zeros, as with load_tile.
template <int NP>
__device__ __forceinline__ void load_tiles(uint32_t dst, const CUtensorMap* map, int col, int row0,
                                           int b, uint32_t bar) {
#pragma unroll
  for (int p = 0; p < NP; ++p)
    tma::load_3d(dst + p * kTileBytes, map, col + 64 * p, row0, b, bar);
}

// n copy barriers from shared address bar on, each completing on one arrival (the thread that
// issues the copies) and their bytes; initialised by thread 0 before a block-wide barrier.
__device__ __forceinline__ void init_copy_barriers(uint32_t bar, int n) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < n; ++i) tma::bar_init(bar + 8 * i, 1);
    tma::bar_init_fence();
  }
  __syncthreads();
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

// The 16×16 A fragments of a 64-column accumulator (rounded to bf16).
__device__ __forceinline__ void to_a(uint32_t (&a)[4][4], const float (&d)[32]) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) acc_to_a(a[kk], &d[8 * kk], &d[8 * kk + 4]);
}

// d = A·Bᵀ over the head dimension (64-row tiles of a head of size HS at shared addresses a and
// b, both K-major: a tile, or above 64 a tile pair whose second holds HS − 64 columns): the
// scores S = Q·Kᵀ, Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ.
template <int HS>
__device__ __forceinline__ void head_product(float (&d)[32], uint32_t a, uint32_t b) {
#pragma unroll
  for (int p = 0; p < (HS > 64 ? 2 : 1); ++p)
#pragma unroll
    for (int kk = 0; kk < (p ? (HS - 64) / 16 : 4); ++kk)
      mma_ss<0, 0>(d, desc_k(a + p * kTileBytes, kk), desc_k(b + p * kTileBytes, kk),
                   p > 0 || kk > 0);
}

// A fragments of a 64×64 bf16 tile (to_a's layout: this warp's 16 rows) into the swizzled tile at
// shared address dst, row-major: the layout that wgmma reads K-major, or MN-major transposed.
__device__ __forceinline__ void store_a_tile(uint32_t dst, const uint32_t (&a)[4][4], int warp,
                                             int g, int t) {
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* gen = smem - smem_addr(smem);  // generic pointer of shared address 0
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = warp * 16 + g + 8 * (e & 1), chunk = 2 * kk + (e >> 1);
      *reinterpret_cast<uint32_t*>(gen + dst + sw128(row, chunk) + 4 * t) = a[kk][e];
    }
}

// Row i (0 or 1) of this thread's part of an accumulator of N / 2 floats (N columns), times mul,
// as bf16 into the N elements at dst (the thread's 2-column pieces of it).
template <int N>
__device__ __forceinline__ void store_row(bf16* dst, const float (&acc)[N / 2], int i, int t,
                                          float mul) {
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
    *reinterpret_cast<uint32_t*>(dst + j * 8 + 2 * t) =
        pack(acc[4 * j + 2 * i] * mul, acc[4 * j + 2 * i + 1] * mul);
}

// The HS-wide products (HS 96 or 128): A from registers, B MN-major over the tile pair at b
// (desc_mn2).
template <int HS, int TB>
__device__ __forceinline__ void mma_rs_wide(float (&d)[HS / 2], const uint32_t (&a)[4],
                                            uint32_t b, int k) {
  if constexpr (HS == 128)
    mma_rs_n128<TB>(d, a, desc_mn2(b, k), true);
  else
    mma_rs_n96<TB>(d, a, desc_mn2(b, k), true);
}

// ---- The qkv bias gradient: column sums of the stored dQ, dK and dV, summed by the kernels that
// store them, the way column_sum_bf16_partial_kernel sums a 64-row chunk of dqkv (bias_grad), so
// the bits are the same: the bf16-rounded values, thread row y adding rows y, y + 8, ... in order,
// then the 8 row sums in order, into partial[chunk][column] with chunk = (b·T + row) / 64.

// The staged tiles at the start of the tiles' shared memory, as a generic pointer (free once the
// main loop is done).
__device__ __forceinline__ float* sum_tiles() {
  extern __shared__ __align__(16) unsigned char smem[];
  return reinterpret_cast<float*>(smem + (smem_base() - smem_addr(smem)));
}

// Index of (row r, column col) in a staged tile.
__device__ __forceinline__ int sum_index(int r, int col) {
  return r * kSumLd + (col ^ ((r & 7) << 3));
}

// This warpgroup's 64×64 accumulator times mul, rounded to bf16 as stored, into tile[row][col].
__device__ __forceinline__ void stage_rounded(float* tile, const float (&acc)[32], float mul,
                                              int warp, int g, int t) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = warp * 16 + g + 8 * i;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 v = __bfloat1622float2(
          __floats2bfloat162_rn(acc[4 * j + 2 * i] * mul, acc[4 * j + 2 * i + 1] * mul));
      *reinterpret_cast<float2*>(tile + sum_index(r, j * 8 + 2 * t)) = v;
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
    for (int k = 0; k < 8; ++k) acc += tile[sum_index(y + 8 * k, col)];
    total += acc;
  }
  return total;
}

// The barrier of a block that is one warpgroup.
struct BlockSync {
  __device__ void operator()() const { __syncthreads(); }
};

// Stages acc (scaled by mul) in `tile` (one staged tile, two with acc2) and writes its 64 column
// sums to dst[0, 64) (null: the warpgroup's rows lie past T); with acc2, also the first n2 of
// acc2's (scaled by mul2) to dst2, in one pass (the second half of the warpgroup sums those). All
// threads that `sync` synchronises call it together.
template <class Sync = BlockSync>
__device__ __forceinline__ void store_column_sums(float* tile, float* dst, const float (&acc)[32],
                                                  float mul, int warp, int g, int t,
                                                  float* dst2 = nullptr,
                                                  const float (*acc2)[32] = nullptr,
                                                  float mul2 = 1.0f, int n2 = 64,
                                                  Sync sync = {}) {
  sync();  // the tiles' last readers are done
  stage_rounded(tile, acc, mul, warp, g, t);
  if (acc2) stage_rounded(tile + kTileRows * kSumLd, *acc2, mul2, warp, g, t);
  sync();
  const int col = threadIdx.x % 128;
  if (col < 64) {
    if (dst) dst[col] = chunk_column_sum(tile, col);
  } else if (acc2 && dst2 && col - 64 < n2) {
    dst2[col - 64] = chunk_column_sum(tile + kTileRows * kSumLd, col - 64);
  }
}

// D = rowsum(dO ∘ O) of row `row` of the swizzled tiles at dO and O: each lane of a pair (lane,
// lane ^ 1) sums four 8-wide chunks of the row in order, then the pair adds its two sums; the sum
// is commutative, so both lanes return the same bits.
__device__ __forceinline__ float row_dot(uint32_t dO, uint32_t O, int row, int lane) {
  extern __shared__ __align__(16) unsigned char smem[];
  const unsigned char* gen = smem - smem_addr(smem);  // generic pointer of shared address 0
  float acc = 0.f;
#pragma unroll
  for (int c = 4 * (lane % 2); c < 4 * (lane % 2) + 4; ++c) {
    const uint32_t off = sw128(row, c);
    acc = fma_dot8(*reinterpret_cast<const uint4*>(gen + dO + off),
                   *reinterpret_cast<const uint4*>(gen + O + off), acc);
  }
  return acc + __shfl_xor_sync(0xffffffffu, acc, 1);
}

// The same rowsum(dO ∘ O) of an HS-wide row read from global memory (dO and O point at the row;
// null past T: zero): each lane of a pair sums HS / 16 8-wide chunks in order, then the pair adds.
template <int HS>
__device__ __forceinline__ float row_dot_global(const bf16* dO, const bf16* O, int lane) {
  constexpr int CH = HS / 16;
  float acc = 0.f;
  if (dO) {
#pragma unroll
    for (int c = CH * (lane % 2); c < CH * (lane % 2) + CH; ++c)
      acc = fma_dot8(__ldg(reinterpret_cast<const uint4*>(dO) + c),
                     __ldg(reinterpret_cast<const uint4*>(O) + c), acc);
  }
  return acc + __shfl_xor_sync(0xffffffffu, acc, 1);
}

// Pᵀ and dSᵀ of a 64-key × 64-query tile in place of Sᵀ (s) and dPᵀ (dp), for this thread's keys
// (key and key + 8) and queries (q0 + 8j + 2t and the next; cL and cD: the tile's lse and D):
// Pᵀ = 2^(Sᵀ·sl2 − lse), zero where the query precedes the key or lies past T (checked when msk),
// and dSᵀ = Pᵀ ∘ (dPᵀ − D). DROP: with Z of element i (4j + e) keep(i) (DropWords or HeldWords)
// and cD holding D·(1 − p), s becomes Z ∘ Pᵀ and dp Pᵀ ∘ (Z ∘ dPᵀ − D·(1 − p)): the dropped Pᵀ
// and dSᵀ without their factor rkeep = 1/(1 − p), which the caller applies to dV, dK and dQ as it
// stores them (two selects an element instead of two selects and two products).
template <bool DROP, class Keep>
__device__ __forceinline__ void transposed_softmax_grad_tile(float (&s)[32], float (&dp)[32],
                                                             const float* cL, const float* cD,
                                                             int q0, int key, bool msk, int T,
                                                             int t, float sl2, const Keep& keep) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int ql = j * 8 + 2 * t;
    const float2 Lv = *reinterpret_cast<const float2*>(cL + ql);
    const float2 Dv = *reinterpret_cast<const float2*>(cD + ql);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = 4 * j + e;
      const int q = q0 + ql + (e & 1), k = key + (e >> 1) * 8;
      float pv = ex2(fmaf(s[i], sl2, -((e & 1) ? Lv.y : Lv.x)));
      if (msk && (q < k || q >= T)) pv = 0.f;
      if constexpr (DROP) {
        const float pz = keep(i) ? pv : 0.f;
        s[i] = pz;
        dp[i] = fmaf(pz, dp[i], -pv * ((e & 1) ? Dv.y : Dv.x));
      } else {
        s[i] = pv;
        dp[i] = pv * (dp[i] - ((e & 1) ? Dv.y : Dv.x));
      }
    }
  }
}

// msk is uniform over a warpgroup and false for most tiles: a second copy of the loop, inlined
// with msk false, keeps the mask's comparisons (four instructions an element) out of those.
template <bool DROP, class Keep>
__device__ __forceinline__ void transposed_softmax_grad(float (&s)[32], float (&dp)[32],
                                                        const float* cL, const float* cD, int q0,
                                                        int key, bool msk, int T, int t,
                                                        float sl2, const Keep& keep) {
  if (!msk)
    transposed_softmax_grad_tile<DROP>(s, dp, cL, cD, q0, key, false, T, t, sl2, keep);
  else
    transposed_softmax_grad_tile<DROP>(s, dp, cL, cD, q0, key, msk, T, t, sl2, keep);
}

// The keep bits of a transposed tile's 32 elements (Sᵀ: keys as rows), from their words hashed
// where they are read.
struct DropWords {
  const flash::Dropout& dr;
  uint64_t w[4][2];
  __device__ DropWords(const flash::Dropout& d, const AttentionColumn& col, int q) : dr(d) {
    flash::group_words<8>(w, col, q);
  }
  __device__ bool operator()(int i) const { return flash::keep_bit<true>(dr, w, i >> 2, i & 3); }
};
// The same from words hashed earlier (flash::held_words<8>, while the tile's products ran).
struct HeldWords {
  const flash::Dropout& dr;
  const uint64_t (&w)[4][2];
  __device__ bool operator()(int i) const { return flash::keep_bit<true>(dr, w, i >> 2, i & 3); }
};
// The keep functor of the instantiations without dropout (never called).
struct NoDrop {
  __device__ bool operator()(int) const { return true; }
};

// ---- Global-memory PTX of the fused backward's dQ accumulator (4 floats at 16-byte-aligned p).
__device__ __forceinline__ void st_cg4(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(a), "f"(b), "f"(c),
               "f"(d)
               : "memory");
}
__device__ __forceinline__ void red_add4(float* p, float a, float b, float c, float d) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(a), "f"(b),
               "f"(c), "f"(d)
               : "memory");
}
__device__ __forceinline__ float4 ld_cg4(const float* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
// Sets *count to value once this block's earlier writes are visible GPU-wide (after a barrier
// over the writers: the fence is cumulative); wait_count below is its other half.
__device__ __forceinline__ void publish_count(int* count, int value) {
  __threadfence();
  atomicExch(count, value);
}
// Spins until *count >= target (acquire: what was written before the count was raised is seen).
__device__ __forceinline__ void wait_count(const int* count, int target) {
  int v;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(count) : "memory");
  } while (v < target);
}

// The (head, tile) of this block in a grid of (tiles, heads): blocks start in launch order (x
// fastest), each head's tiles from the last down; the last `tail_heads` heads are interleaved
// tile by tile instead, their longest tiles first (the last tile first if `longest_last`, else
// tile 0 first), so that the grid ends on short blocks rather than on its last heads' long ones.
__device__ __forceinline__ int2 grid_block(int tail_heads, bool longest_last) {
  const int nq = gridDim.x, first_tail = gridDim.y - tail_heads;
  if (int(blockIdx.y) < first_tail) return {int(blockIdx.y), nq - 1 - int(blockIdx.x)};
  const int j = (blockIdx.y - first_tail) * nq + blockIdx.x, rank = j / tail_heads;
  return {first_tail + j % tail_heads, longest_last ? nq - 1 - rank : rank};
}

// The fused backward's (head, key tile): a key tile's work shrinks with its index, and each
// head's blocks start highest key tile (the shortest) first, so that a block only waits for
// blocks launched before it. The interleaved last heads start key tile 0 of each first: their
// blocks wait for blocks launched after them, which is deadlock-free only while those can still
// start, i.e. while the interleaved blocks that may wait, at most tail_heads·(nq - 1), leave
// resident slots free (the host keeps them to 3/4 of the slots).
__device__ __forceinline__ int2 backward_block(int tail_heads) {
  return grid_block(tail_heads, false);
}

#endif  // GPT_SM90_WGMMA

template <class Kernel>
void set_smem(Kernel kernel, size_t bytes) {
  GPT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
}

// Shared bytes of `tiles` swizzled tiles plus `extra`, with room to align to 1024.
size_t tile_smem(int tiles, size_t extra = 0) { return size_t(tiles) * kTileBytes + extra + 1024; }

// The heads that backward_block interleaves longest first at the end of the grid, at most: its
// blocks may wait for blocks launched after them, so the interleaved blocks that can wait,
// heads·(nq - 1), are kept to SLOT_QUARTERS quarters of the blocks that fit on the device at once
// (the rest leaves room for whatever else holds SMs). Interleaving brings a list schedule of the
// tile counts, waits included, about halfway back to a balanced one.
// (Host-side queries only; a graph replay does not call this.)
template <int TAIL_HEADS, int SLOT_QUARTERS, class Kernel>
int backward_tail_heads(Kernel kernel, int threads, size_t smem, int heads, int nq) {
  if (nq < 2) return 0;
  int dev = 0, per_sm = 0, sms = 0;
  GPT_CUDA_CHECK(cudaGetDevice(&dev));
  GPT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  GPT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int slots = per_sm * sms;  // blocks resident at once
  return std::min({heads, TAIL_HEADS, SLOT_QUARTERS * slots / 4 / (nq - 1)});
}

}  // namespace
}  // namespace gpt::cuda::sm90
