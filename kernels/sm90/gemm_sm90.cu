#include "kernels/sm90/gemm_sm90.cuh"

#include <cstdint>
#include <mutex>

#include "kernels/sm90/capability.cuh"
#include "kernels/sm90/tensor_map.h"
#include "kernels/sm90/tma_pipeline.cuh"
#include "kernels/sm90/wgmma.cuh"
#include "kernels/smem_ptx.cuh"

namespace gpt::cuda {
namespace {

using sm90::tensor_map;

constexpr int kBM = 128, kBN = 256, kBK = 64;  // output tile rows, columns; k per stage
constexpr int kABytes = kBM * kBK * 2;          // 16 KB: 128 rows of 128 bytes
constexpr int kBBytes = kBN * kBK * 2;          // 32 KB
constexpr int kStageBytes = kABytes + kBBytes;
constexpr int kThreads = 384;  // warpgroup 0 loads, 1 and 2 multiply (rows 0-63, 64-127)

constexpr int kStages = 4;  // three leave the loads too little ahead at large K
// Shared memory: the pipeline stages, then the output staging of the two consumer warpgroups
// (64 rows × 128 columns of bf16 each), then the barriers.
constexpr int kStagingBytes = 64 * 128 * 2;
constexpr int kSmemBytes = kStages * kStageBytes + 2 * kStagingBytes + 2 * kStages * 8 + 1024;

struct Params {
  int M, N, K;
  int tiles_n, tiles;
  const bf16* bias;
  float* dbias_partial;  // kBf16DGelu, may be null
};

#ifdef GPT_SM90_WGMMA

constexpr int kConsumerWarps = 8;
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi), as in gelu.cu

__device__ __forceinline__ float tanh_fast(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// No "memory" clobber: the staging is read only after fence_smem() and a barrier, which have
// one, and without it the compiler may move plain shared loads (the GELU backward's
// pre-activations) ahead of these stores, so that their latency overlaps the math of earlier pairs.
__device__ __forceinline__ void sts32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v));
}
// A plain pointer to shared address addr (ld.shared the compiler may schedule; any barrier or
// fence with a "memory" clobber still orders it).
template <class T>
__device__ __forceinline__ const T* shared_ptr(uint32_t addr) {
  extern __shared__ uint8_t smem_raw[];
  return reinterpret_cast<const T*>(smem_raw + (addr - smem_addr(smem_raw)));
}
// Two bf16 in one register to floats: the low half shifted up, the high half masked (two
// instructions; the intrinsic's byte permute takes three).
__device__ __forceinline__ float2 bf16x2_to_float2(uint32_t v) {
  return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xFFFF0000u));
}
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&b);
}
// GELU, tanh form: 0.5·x·(1 + tanh(u)), u = sqrt(2/pi)·(x + 0.044715·x³) written as
// x·(k0 + k1·x²) (one multiply fewer than gelu.cu's order; tanh.approx rounds far coarser).
constexpr float kGeluK1 = kGeluScale * 0.044715f;
__device__ __forceinline__ float gelu_tanh_arg(float x, float x2) {
  return x * fmaf(x2, kGeluK1, kGeluScale);
}
__device__ __forceinline__ float gelu_fast(float x) {
  const float hx = 0.5f * x;
  return fmaf(hx, tanh_fast(gelu_tanh_arg(x, x * x)), hx);
}
// GELU and its derivative at x, sharing one tanh.approx: y as gelu_fast, and
// gelu'(x) = 0.5·(1 + th) + 0.5·x·(1 - th²)·(k0 + 3·k1·x²).
__device__ __forceinline__ void gelu_and_grad(float x, float& y, float& grad) {
  const float x2 = x * x, th = tanh_fast(gelu_tanh_arg(x, x2)), hx = 0.5f * x;
  y = fmaf(hx, th, hx);
  grad = fmaf(hx * fmaf(-th, th, 1.0f), fmaf(x2, 3.0f * kGeluK1, kGeluScale), fmaf(0.5f, th, 0.5f));
}
// The 128 threads of one consumer warpgroup (named barrier 1 or 2; 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_sync(int half) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + half) : "memory");
}

// Byte offset of the thread's 4-byte pair j (8-column group j % 8 of the 64-column box j / 8) in
// row `row` of 64×64 bf16 boxes with the 128-byte swizzle: the layout of the output staging and
// of the pre-activation stage (each thread reads and writes only its own pairs).
__device__ __forceinline__ uint32_t swizzled_pair(int j, int row, int lane) {
  return (j / 8) * 8192 + row * 128 + (((j % 8) ^ (lane / 4)) << 4) + 4 * (lane % 4);
}

// Columns 128·part .. 128·part + 127 of a bf16 output of the warpgroup's 64×256 half, staged as
// two 64×64 boxes with the 128-byte swizzle (the tensor map's layout; a warp's 4-byte stores hit
// 32 different banks) and written by the copy engine, which the warpgroup does not wait for:
// before it writes the buffer again, the previous stores must only have read it. value(j, h)
// gives the two outputs of accumulator pair (j, h) as packed bf16; `staged` runs once the buffer
// holds the part (it may read it; the next part waits for every thread).
template <class Value, class Staged>
__device__ __forceinline__ void store_part_async(uint32_t staging, int half, const CUtensorMap* map,
                                                 int row0, int col0, int part, Value value,
                                                 Staged staged) {
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  if (t == 0) tma::store_wait_read();
  warpgroup_sync(half);
#pragma unroll
  for (int jj = 0; jj < 16; ++jj) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = 16 * warp + lane / 4 + 8 * h;  // row % 8 == lane / 4
      sts32(staging + swizzled_pair(jj, row, lane), value(16 * part + jj, h));
    }
  }
  sm90::fence_smem();
  warpgroup_sync(half);
  if (t == 0) {
    tma::store_2d(map, col0 + 128 * part, row0, staging);
    tma::store_2d(map, col0 + 128 * part + 64, row0, staging + 8192);
    tma::store_commit();
  }
  staged();
}

// The whole 64×256 half: value(j, h) gives the packed outputs of accumulator pair (j, h).
template <class Value>
__device__ __forceinline__ void store_bf16_async(uint32_t staging, int half, const CUtensorMap* map,
                                                 int row0, int col0, Value value) {
#pragma unroll
  for (int part = 0; part < 2; ++part)
    store_part_async(staging, half, map, row0, col0, part, value, [] {});
}

// Column t (0..127) of a staged 64×128 part summed over its 64 rows in the order of
// gelu_backward_bf16_bias_kernel: thread row ty adds rows ty, ty + 8, ..., ty + 56, then the 8
// thread-row sums are added in order.
__device__ __forceinline__ float staged_column_sum(uint32_t staging, int t) {
  const unsigned short* col =
      shared_ptr<unsigned short>(staging + (t / 64) * 8192 + 2 * (t % 8));
  const int chunk = (t % 64) / 8;
  float s = 0.0f;
#pragma unroll
  for (int ty = 0; ty < 8; ++ty) {
    float a = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i)
      a += __uint_as_float(uint32_t(col[((ty + 8 * i) * 128 + ((chunk ^ ty) << 4)) / 2]) << 16);
    s += a;
  }
  return s;
}

// The epilogue of one consumer warpgroup: its accumulators are rows row0 .. row0 + 63 of the
// output, columns col0 .. col0 + 255; thread (warp w, lane) holds rows 16w + lane/4 (+8) at
// columns 8j + 2(lane % 4) + {0, 1}: d[4j..4j+1] and d[4j+2..4j+3].
// kBf16DGelu: x_tile holds the warpgroup's 64×256 pre-activations as four 64×64 swizzled boxes
// (a pipeline stage, loaded after the tile's k-blocks); release() hands it back once read.
template <Sm90Epilogue E, bool kAct, class Release>
__device__ __forceinline__ void store_tile(const Params& p, const CUtensorMap* map_out,
                                           const CUtensorMap* map_pre, float (&d)[128],
                                           uint32_t staging, int half, int row0, int col0,
                                           uint32_t x_tile, Release release) {
  const int lane = threadIdx.x % 32;
  // The accumulator pair (j, h) plus the bias, left in d (the GELU round reads it there).
  auto biased = [&](int j, int h) {
    float2 b = make_float2(0.f, 0.f);
    if (p.bias)
      b = __bfloat1622float2(
          *reinterpret_cast<const __nv_bfloat162*>(p.bias + col0 + 8 * j + 2 * (lane % 4)));
    d[4 * j + 2 * h] += b.x;
    d[4 * j + 2 * h + 1] += b.y;
    return pack_bf16x2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
  };
  if constexpr (E == Sm90Epilogue::kBf16Gelu) {
    store_bf16_async(staging, half, map_pre, row0, col0, biased);
    store_bf16_async(staging, half, map_out, row0, col0, [&](int j, int h) {
      return pack_bf16x2(gelu_fast(d[4 * j + 2 * h]), gelu_fast(d[4 * j + 2 * h + 1]));
    });
  } else if constexpr (E == Sm90Epilogue::kBf16DGelu) {
    // dH = bf16(d) as the unfused path stores it; out = dx; the GELU output goes to map_pre (the
    // kernel's second output map) after both parts of dx, from d, which then holds it packed
    // (kAct: not when the layer kept the forward's, whose kernel leaves out that math).
    const int t = threadIdx.x % 128, warp = t / 32;
    const size_t chunk = size_t(row0 / 64) * p.N + col0;  // this warpgroup's 64-row chunk
    const uint32_t* xw = shared_ptr<uint32_t>(x_tile);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      // The thread's own pre-activation pairs of the part (the swizzled layout of the staging),
      // all loaded before the math, so that their latency overlaps it.
      uint32_t xr[32];
#pragma unroll
      for (int jj = 0; jj < 16; ++jj)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int j = 16 * part + jj, row = 16 * warp + lane / 4 + 8 * h;
          xr[2 * jj + h] = xw[swizzled_pair(j, row, lane) / 4];
        }
      store_part_async(
          staging, half, map_out, row0, col0, part,
          [&](int j, int h) {
            const float2 x = bf16x2_to_float2(xr[2 * (j % 16) + h]);
            const float2 dh = bf16x2_to_float2(pack_bf16x2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]));
            float y0, g0, y1, g1;
            gelu_and_grad(x.x, y0, g0);
            gelu_and_grad(x.y, y1, g1);
            // The GELU output, rounded as stored, packed into one register (the other dies).
            if constexpr (kAct) d[4 * j + 2 * h] = __uint_as_float(pack_bf16x2(y0, y1));
            return pack_bf16x2(g0 * dh.x, g1 * dh.y);
          },
          [&] {
            if (p.dbias_partial)
              p.dbias_partial[chunk + 128 * part + t] = staged_column_sum(staging, t);
          });
    }
    release();  // every thread has read x_tile (the parts' barriers)
    if constexpr (kAct)
      store_bf16_async(staging, half, map_pre, row0, col0,
                       [&](int j, int h) { return __float_as_uint(d[4 * j + 2 * h]); });
  } else {
    store_bf16_async(staging, half, map_out, row0, col0, biased);
  }
}

#endif  // GPT_SM90_WGMMA

// kBKN: B stored [K, N] (N contiguous, a weight in the input-gradient products) and loaded as
// four 64×64 boxes per stage, read by wgmma as MN-major (64-column blocks 8192 bytes apart, 8-row
// groups of k 1024 apart); otherwise [N, K], one 256×64 box, K-major.
// kAct: kBf16DGelu stores the GELU output (gelu_out given).
// kCluster 2: CTA pairs take vertically adjacent tiles (rows 256·i + 128·rank, the same columns)
// and each loads half of their common B tile into both CTAs' stages (multicast), so that a stage
// costs 32 KB of loads instead of 48; a stage is then refilled once both CTAs' consumers have
// released it.
template <Sm90Epilogue E, bool kBKN, bool kAct = false, int kCluster = 1>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                   const __grid_constant__ CUtensorMap map_b,
                   const __grid_constant__ CUtensorMap map_out,
                   const __grid_constant__ CUtensorMap map_pre,
                   const __grid_constant__ CUtensorMap map_x, const Params p) {
  // kBf16DGelu: after a tile's k-blocks the loader puts the tile's pre-activations (map_x) into
  // the next two stages, rows 0-63 then 64-127, 32 KB each; each consumer warpgroup reads its
  // own and both release both, so the stage barriers keep their counts.
#ifdef GPT_SM90_WGMMA
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t staging = base + kStages * kStageBytes;  // one buffer per consumer warpgroup
  const uint32_t full = staging + 2 * kStagingBytes;  // kStages barriers, then kStages "empty"
  const uint32_t empty = full + kStages * 8;
  auto tile_a = [&](int s) { return base + s * kStageBytes; };
  auto tile_b = [&](int s) { return base + s * kStageBytes + kABytes; };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      tma::bar_init(full + 8 * s, 1);
      tma::bar_init(empty + 8 * s, kCluster * kConsumerWarps);
    }
    tma::bar_init_fence();
  }
  if constexpr (kCluster > 1)
    tma::cluster_sync();
  else
    __syncthreads();

  const int rank = kCluster > 1 ? int(tma::cluster_rank()) : 0;
  // The CTA's tiles: cluster tile ct is rows kCluster·kBM·(ct / tiles_n) .., columns
  // kBN·(ct % tiles_n) ..; this CTA takes its rank's 128 rows of it.
  const int first_tile = blockIdx.x / kCluster, tile_step = gridDim.x / kCluster;
  const int cluster_tiles = p.tiles / kCluster;
  auto tile_m0 = [&](int ct) { return ((ct / p.tiles_n) * kCluster + rank) * kBM; };
  auto tile_n0 = [&](int ct) { return (ct % p.tiles_n) * kBN; };
  // A consumer warp hands stage s back to the loader of every CTA that writes into it.
  auto release = [&](int s) {
    if constexpr (kCluster > 1) {
      for (int c = 0; c < kCluster; ++c) tma::bar_arrive_cluster(empty + 8 * s, c);
    } else {
      tma::bar_arrive(empty + 8 * s);
    }
  };

  // A box of B into this CTA's stage, and the pair's if paired (the same offset in both).
  auto load_b = [&](uint32_t dst, int c0, int c1, uint32_t bar) {
    if constexpr (kCluster > 1)
      tma::load_2d_multicast(dst, &map_b, c0, c1, bar, (1u << kCluster) - 1);
    else
      tma::load_2d(dst, &map_b, c0, c1, bar);
  };

  const int kblocks = p.K / kBK;
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    tma::set_max_registers_dec<40>();
    if (threadIdx.x != 0) return;
    int it = 0;
    for (int tile = first_tile; tile < cluster_tiles; tile += tile_step) {
      const int m0 = tile_m0(tile), n0 = tile_n0(tile);
      for (int kb = 0; kb < kblocks; ++kb, ++it) {
        const int s = it % kStages;
        tma::bar_wait(empty + 8 * s, ((it / kStages) & 1) ^ 1);
        tma::bar_arrive_expect(full + 8 * s, kStageBytes);
        tma::load_2d(tile_a(s), &map_a, kb * kBK, m0, full + 8 * s);
        // This CTA's part of the B tile (all of it unpaired): 64-column boxes if [K, N].
        constexpr int kPart = kBN / kCluster;
        if constexpr (kBKN) {
#pragma unroll
          for (int box = 0; box < kPart / 64; ++box) {
            const int col = rank * kPart + 64 * box;
            load_b(tile_b(s) + col * 128, n0 + col, kb * kBK, full + 8 * s);
          }
        } else {
          load_b(tile_b(s) + rank * kPart * 128, kb * kBK, n0 + rank * kPart, full + 8 * s);
        }
      }
      if constexpr (E == Sm90Epilogue::kBf16DGelu) {
        for (int h = 0; h < 2; ++h, ++it) {
          const int s = it % kStages;
          tma::bar_wait(empty + 8 * s, ((it / kStages) & 1) ^ 1);
          tma::bar_arrive_expect(full + 8 * s, 64 * kBN * 2);
#pragma unroll
          for (int box = 0; box < kBN / 64; ++box)
            tma::load_2d(tile_a(s) + box * 8192, &map_x, n0 + 64 * box, m0 + 64 * h, full + 8 * s);
        }
      }
    }
    // The other CTA's consumers still release stages into this CTA's barriers: stay until each
    // stage's last use has been released.
    if constexpr (kCluster > 1)
      for (int s = 0; s < kStages; ++s, ++it)
        tma::bar_wait(empty + 8 * (it % kStages), ((it / kStages) & 1) ^ 1);
  } else {
    tma::set_max_registers_inc<232>();
    const int half = wg - 1;  // rows 64·half .. 64·half + 63 of the tile
    const int lane = threadIdx.x % 32;
    float d[128];
    int it = 0;
    for (int tile = first_tile; tile < cluster_tiles; tile += tile_step) {
      const int m0 = tile_m0(tile), n0 = tile_n0(tile);
      // The kBf16DGelu epilogue leaves the packed GELU output in d: zeros instead (the first
      // product ignores them), so that those values do not live on into the products, where
      // ptxas would order them with extra warpgroup waits.
      if constexpr (E == Sm90Epilogue::kBf16DGelu)
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
      for (int kb = 0; kb < kblocks; ++kb, ++it) {
        const int s = it % kStages;
        tma::bar_wait(full + 8 * s, (it / kStages) & 1);
        sm90::fence();
#pragma unroll
        for (int k = 0; k < kBK / 16; ++k)
          sm90::mma_ss_n256<kBKN>(d, sm90::desc_k(tile_a(s) + half * 64 * 128, k),
                                  kBKN ? sm90::desc(tile_b(s), 8192, 1024, 2048 * k)
                                       : sm90::desc_k(tile_b(s), k),
                                  kb > 0 || k > 0);
        sm90::commit();
        if (kb > 0) {
          sm90::wait<1>();  // the previous stage's products are done: hand it back
          if (lane == 0) release((it - 1) % kStages);
        }
      }
      sm90::wait<0>();
      if (lane == 0) release((it - 1) % kStages);
      uint32_t x_tile = 0;
      if constexpr (E == Sm90Epilogue::kBf16DGelu) {
        const int s = (it + half) % kStages;
        tma::bar_wait(full + 8 * s, ((it + half) / kStages) & 1);
        x_tile = tile_a(s);
      }
      store_tile<E, kAct>(p, &map_out, &map_pre, d, staging + half * kStagingBytes, half,
                    m0 + 64 * half, n0, x_tile, [&] {
                      if (lane == 0)
                        for (int h = 0; h < 2; ++h) release((it + h) % kStages);
                    });
      if constexpr (E == Sm90Epilogue::kBf16DGelu) it += 2;
    }
    if (threadIdx.x % 128 == 0) tma::store_wait_all();
  }
#endif
}

int sm_count() {
  int dev = 0, n = 0;
  GPT_CUDA_CHECK(cudaGetDevice(&dev));
  GPT_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

// A launch of gemm_kernel's block and shared memory on `grid` CTAs in clusters of `cluster`.
class ClusterLaunch {
 public:
  ClusterLaunch(int grid, int cluster, cudaStream_t s) {
    attr_.id = cudaLaunchAttributeClusterDimension;
    attr_.val.clusterDim.x = cluster;
    attr_.val.clusterDim.y = attr_.val.clusterDim.z = 1;
    config_.gridDim = dim3(grid);
    config_.blockDim = dim3(kThreads);
    config_.dynamicSmemBytes = kSmemBytes;
    config_.stream = s;
    config_.attrs = &attr_;
    config_.numAttrs = cluster > 1 ? 1 : 0;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
  const cudaLaunchConfig_t* config() const { return &config_; }

 private:
  cudaLaunchAttribute attr_{};
  cudaLaunchConfig_t config_{};
};

// How many CTAs of gemm_kernel<...> fit on the device at once, in clusters of kCluster.
template <Sm90Epilogue E, bool kBKN, bool kAct, int kCluster>
int resident_ctas() {
  if (kCluster == 1) return sm_count();
  const ClusterLaunch launch(kCluster * sm_count(), kCluster, nullptr);
  int clusters = 0;
  GPT_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, gemm_kernel<E, kBKN, kAct, kCluster>,
                                                launch.config()));
  return kCluster * clusters;
}

// The CTAs of gemm_kernel<...> resident at once, found on first use (0: clusters of kCluster
// cannot be scheduled here, e.g. on a GPU partition too small for them).
template <Sm90Epilogue E, bool kBKN, bool kAct, int kCluster>
int resident_once() {
  static std::once_flag attr;
  static int resident = 0;
  std::call_once(attr, [] {
    GPT_CUDA_CHECK(cudaFuncSetAttribute(gemm_kernel<E, kBKN, kAct, kCluster>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    resident = resident_ctas<E, kBKN, kAct, kCluster>();
  });
  return resident;
}

// On min(tiles, resident) CTAs, resident_once's count for kCluster.
template <Sm90Epilogue E, bool kBKN, bool kAct, int kCluster>
void launch_clustered(const Sm90Gemm& g, int resident) {
  Params p{g.M, g.N, g.K, g.N / kBN, (g.M / kBM) * (g.N / kBN), g.bias, g.dbias_partial};
  const CUtensorMap map_a = tensor_map(g.a, g.M, g.K, kBM);
  const CUtensorMap map_b =
      kBKN ? tensor_map(g.b, g.K, g.N, 64) : tensor_map(g.b, g.N, g.K, kBN / kCluster);
  // The outputs, stored in 64×64 boxes (map_pre: the pre-activation, or kBf16DGelu's GELU
  // output; unused otherwise, where any valid map will do), and kBf16DGelu's input, loaded in
  // 64×64 boxes.
  const CUtensorMap map_out = tensor_map(g.out, g.M, g.N, 64);
  const bf16* second = E == Sm90Epilogue::kBf16DGelu ? g.gelu_out : g.pre;
  const CUtensorMap map_pre = second ? tensor_map(second, g.M, g.N, 64) : map_out;
  const CUtensorMap map_x =
      E == Sm90Epilogue::kBf16DGelu ? tensor_map(g.gelu_pre, g.M, g.N, 64) : map_out;
  const ClusterLaunch launch(p.tiles < resident ? p.tiles : resident, kCluster, stream());
  GPT_CUDA_CHECK(cudaLaunchKernelEx(launch.config(), gemm_kernel<E, kBKN, kAct, kCluster>, map_a,
                                    map_b, map_out, map_pre, map_x, p));
}

// Pairs of CTAs share their B tiles where the tile rows pair up and the device can hold a pair.
template <Sm90Epilogue E, bool kBKN, bool kAct = false>
void launch(const Sm90Gemm& g) {
  if ((g.M / kBM) % 2 == 0) {
    const int paired = resident_once<E, kBKN, kAct, 2>();
    if (paired > 0) return launch_clustered<E, kBKN, kAct, 2>(g, paired);
  }
  launch_clustered<E, kBKN, kAct, 1>(g, resident_once<E, kBKN, kAct, 1>());
}

template <Sm90Epilogue E>
void launch_for_layout(const Sm90Gemm& g) {
  if (g.b_kn)
    launch<E, true>(g);
  else
    launch<E, false>(g);
}

// --sm90-gemm gelu: the forward's GELU product on inputs this wide or wider goes to cuBLASLt.
constexpr int kGeluForwardCublasK = 2048;

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

bool gemm_sm90_applies(int M, int N, int K) {
  if (M <= 0 || M % kBM != 0 || N <= 0 || N % kBN != 0 || K <= 0 || K % kBK != 0 ||
      !sm90_available())
    return false;
  // One output tile per CTA and round, no split-K: the last round must keep most SMs busy (a
  // product of few tiles and long k would leave many SMs idle).
  static const int sms = sm_count();
  const long tiles = long(M / kBM) * (N / kBN), rounds = (tiles + sms - 1) / sms;
  return tiles >= 0.9 * double(rounds) * sms;
}

bool gemm_sm90(const Sm90Gemm& g, Sm90Epilogue epilogue) {
  const Sm90GemmUse u = kernel_config().sm90_gemm;
  if (u == Sm90GemmUse::kNone || (u == Sm90GemmUse::kGelu && epilogue == Sm90Epilogue::kBf16))
    return false;
  // Over a longer k loop cuBLASLt's main loop outruns ours by more than our GELU epilogue saves.
  if (u == Sm90GemmUse::kGelu && epilogue == Sm90Epilogue::kBf16Gelu && g.K >= kGeluForwardCublasK)
    return false;
  if (!gemm_sm90_applies(g.M, g.N, g.K) || !aligned16(g.a) || !aligned16(g.b) ||
      !aligned16(g.out) || (g.pre && !aligned16(g.pre)) || (g.bias && !aligned16(g.bias)))
    return false;
  if (epilogue == Sm90Epilogue::kBf16DGelu &&
      (!g.b_kn || !g.gelu_pre || !aligned16(g.gelu_pre) || (g.gelu_out && !aligned16(g.gelu_out))))
    return false;
  switch (epilogue) {
    case Sm90Epilogue::kBf16: launch_for_layout<Sm90Epilogue::kBf16>(g); break;
    case Sm90Epilogue::kBf16Gelu: launch_for_layout<Sm90Epilogue::kBf16Gelu>(g); break;
    case Sm90Epilogue::kBf16DGelu:
      if (g.gelu_out)
        launch<Sm90Epilogue::kBf16DGelu, true, true>(g);
      else
        launch<Sm90Epilogue::kBf16DGelu, true, false>(g);
      break;
  }
  return true;
}

}  // namespace gpt::cuda
