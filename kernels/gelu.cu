#include "kernels/gelu.cuh"

#include <cstdint>

#include "kernels/column_sum.cuh"

namespace gpt::cuda {
namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(kGeluScale * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float gelu_grad(float x) {
  const float th = tanhf(kGeluScale * (x + 0.044715f * x * x * x));
  const float sech2 = 1.0f - th * th;
  return 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

// One element each (for_each_index): the GELU as fp32, bf16 or fp16 (rounded to nearest even,
// as convert.cu's casts), and its backward added to dinp (Add) or stored (Set, rounded as the CPU
// twin's product).
template <class Out>
struct GeluForward {
  Out* out;
  const float* inp;
  __device__ void operator()(size_t i) const { out[i] = static_cast<Out>(gelu(inp[i])); }
};
struct GeluBackwardAdd {
  float* dinp;
  const float* inp;
  const float* dout;
  __device__ void operator()(size_t i) const { dinp[i] += gelu_grad(inp[i]) * dout[i]; }
};
struct GeluBackwardSet {
  float* dinp;
  const float* inp;
  const float* dout;
  __device__ void operator()(size_t i) const { dinp[i] = __fmul_rn(gelu_grad(inp[i]), dout[i]); }
};

// Eight bf16 per thread (one 16-byte load/store); the tail element by element.
constexpr int kVec = 8;
struct alignas(16) Bf16x8 {
  __nv_bfloat162 v[4];
};

__global__ void gelu_forward_bf16_bf16_kernel(bf16* out, const bf16* inp, size_t N) {
  const size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i + kVec <= N) {
    const Bf16x8 x = *reinterpret_cast<const Bf16x8*>(inp + i);
    Bf16x8 y;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __bfloat1622float2(x.v[k]);
      y.v[k] = __floats2bfloat162_rn(gelu(f.x), gelu(f.y));
    }
    *reinterpret_cast<Bf16x8*>(out + i) = y;
  } else {
    for (size_t j = i; j < N; ++j) out[j] = __float2bfloat16_rn(gelu(__bfloat162float(inp[j])));
  }
}

// The backward of 8 elements: dx = bf16(gelu'(x) · d), y = bf16(gelu(x)). Shared by the plain
// and the bias-summing kernels, so that both write the same bits.
__device__ __forceinline__ void gelu_backward_x8(Bf16x8& dx, Bf16x8& y, const Bf16x8& x,
                                                 const Bf16x8& d) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = __bfloat1622float2(x.v[k]), g = __bfloat1622float2(d.v[k]);
    dx.v[k] = __floats2bfloat162_rn(gelu_grad(f.x) * g.x, gelu_grad(f.y) * g.y);
    y.v[k] = __floats2bfloat162_rn(gelu(f.x), gelu(f.y));
  }
}

// One element (the tails and the unvectorised path): dinp[j] = bf16(gelu'(x) · d), returned
// too; recomputed[j] = bf16(gelu(x)) unless recomputed is nullptr.
__device__ __forceinline__ bf16 gelu_backward_x1(bf16* dinp, bf16* recomputed, const bf16* inp,
                                                 const bf16* dout, size_t j) {
  const float f = __bfloat162float(inp[j]);
  const bf16 dx = __float2bfloat16_rn(gelu_grad(f) * __bfloat162float(dout[j]));
  dinp[j] = dx;
  if (recomputed) recomputed[j] = __float2bfloat16_rn(gelu(f));
  return dx;
}

// dinp = gelu'(inp) · dout; recomputed (if not nullptr) = gelu(inp), the forward's output again.
__global__ void gelu_backward_bf16_kernel(bf16* dinp, bf16* recomputed, const bf16* inp,
                                          const bf16* dout, size_t N) {
  const size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i + kVec <= N) {
    const Bf16x8 x = *reinterpret_cast<const Bf16x8*>(inp + i);
    const Bf16x8 d = *reinterpret_cast<const Bf16x8*>(dout + i);
    Bf16x8 dx, y;
    gelu_backward_x8(dx, y, x, d);
    *reinterpret_cast<Bf16x8*>(dinp + i) = dx;
    if (recomputed) *reinterpret_cast<Bf16x8*>(recomputed + i) = y;
  } else {
    for (size_t j = i; j < N; ++j) gelu_backward_x1(dinp, recomputed, inp, dout, j);
  }
}

// The same over [N, F] rows, with the column sums of the written (bf16-rounded) dinp.
// Block: 256 threads = 8 thread rows (one warp each) × 32 threads; thread (tx, ty) owns the 8
// columns c0 = blockIdx.x·256 + 8·tx .. c0 + 7 (one 16-byte vector of a row: a warp reads 512
// contiguous bytes of each tensor per row) and, of the chunk of kBiasRows rows
// r0 = blockIdx.y·kBiasRows .., the rows r0 + ty, r0 + ty + 8, ..., in that order, adding its
// 8 rounded dinp values into 8 register partials. The block then writes its partials to shared
// memory, and thread t (column blockIdx.x·256 + t) adds the 8 thread rows' partials in order
// 0..7 into partial[chunk][c]; column_sum_finish adds the chunks in a fixed order.
// kVector = false (F % 8 != 0 or unaligned pointers): the same ownership and order, element by
// element.
constexpr int kBiasTX = 32, kBiasTY = 8, kBiasThreads = kBiasTX * kBiasTY;
constexpr int kBiasCols = kBiasTX * kVec;  // 256 columns per block
constexpr int kBiasRows = 64;              // rows per chunk: 8 per thread row
static_assert(kBiasCols == kBiasThreads, "one column per thread in the block's combine step");

// 6 blocks per SM (48 warps): at most 40 registers, no spills (8 blocks would spill).
template <bool kVector>
__global__ void __launch_bounds__(kBiasThreads, 6) gelu_backward_bf16_bias_kernel(
    bf16* __restrict__ dinp, bf16* __restrict__ recomputed, float* __restrict__ partial,
    const bf16* __restrict__ inp, const bf16* __restrict__ dout, int N, int F) {
  __shared__ __align__(16) float sh[kBiasTY][kBiasCols];
  const int tx = threadIdx.x % kBiasTX, ty = threadIdx.x / kBiasTX;
  const int c0 = blockIdx.x * kBiasCols + tx * kVec;
  const int r0 = blockIdx.y * kBiasRows, r1 = min(N, r0 + kBiasRows);
  float acc[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) acc[j] = 0.0f;
  if (c0 < F) {  // kVector: F % 8 == 0, so all 8 columns are in range
    for (int r = r0 + ty; r < r1; r += kBiasTY) {
      const size_t i = size_t(r) * F + c0;
      if constexpr (kVector) {
        const Bf16x8 x = *reinterpret_cast<const Bf16x8*>(inp + i);
        const Bf16x8 d = *reinterpret_cast<const Bf16x8*>(dout + i);
        Bf16x8 dx, y;
        gelu_backward_x8(dx, y, x, d);
        *reinterpret_cast<Bf16x8*>(dinp + i) = dx;
        if (recomputed) *reinterpret_cast<Bf16x8*>(recomputed + i) = y;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float2 v = __bfloat1622float2(dx.v[k]);
          acc[2 * k] += v.x;
          acc[2 * k + 1] += v.y;
        }
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          if (c0 + j >= F) break;
          acc[j] += __bfloat162float(gelu_backward_x1(dinp, recomputed, inp, dout, i + j));
        }
      }
    }
  }
  // Out-of-range columns hold zeros (never written to partial).
  float4* s4 = reinterpret_cast<float4*>(&sh[ty][tx * kVec]);
  s4[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
  s4[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  __syncthreads();
  const int c = blockIdx.x * kBiasCols + threadIdx.x;
  if (c < F) {
    float s = 0.0f;
#pragma unroll
    for (int y = 0; y < kBiasTY; ++y) s += sh[y][threadIdx.x];
    partial[size_t(blockIdx.y) * F + c] = s;
  }
}

}  // namespace

void gelu_forward(float* out, const float* inp, int N) {
  if (N > 0) for_each_index(N, GeluForward<float>{out, inp});
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int N) {
  if (N > 0) for_each_index(N, GeluBackwardAdd{dinp, inp, dout});
}

void gelu_forward_bf16(bf16* out, const float* inp, int N) {
  if (N > 0) for_each_index(N, GeluForward<bf16>{out, inp});
}

void gelu_forward_fp16(fp16* out, const float* inp, int N) {
  if (N > 0) for_each_index(N, GeluForward<fp16>{out, inp});
}

void gelu_backward_set(float* dinp, const float* inp, const float* dout, int N) {
  if (N > 0) for_each_index(N, GeluBackwardSet{dinp, inp, dout});
}

void gelu_forward_bf16(bf16* out, const bf16* inp, size_t N) {
  if (N == 0) return;
  gelu_forward_bf16_bf16_kernel<<<ceil_div(ceil_div(N, kVec), 256), 256, 0, stream()>>>(out, inp, N);
  GPT_CUDA_CHECK_LAUNCH();
}

void gelu_backward_bf16(bf16* dinp, bf16* recomputed, const bf16* inp, const bf16* dout, size_t N) {
  if (N == 0) return;
  gelu_backward_bf16_kernel<<<ceil_div(ceil_div(N, kVec), 256), 256, 0, stream()>>>(
      dinp, recomputed, inp, dout, N);
  GPT_CUDA_CHECK_LAUNCH();
}

void gelu_backward_bf16_bias(bf16* dinp, bf16* recomputed, const bf16* inp, const bf16* dout,
                             int N, int F, float* dbias) {
  if (N <= 0 || F <= 0) return;
  if (!dbias) return gelu_backward_bf16(dinp, recomputed, inp, dout, size_t(N) * F);
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vector = F % kVec == 0 && aligned(dinp) && aligned(inp) && aligned(dout) &&
                      (!recomputed || aligned(recomputed));
  const int chunks = int(ceil_div(N, kBiasRows));  // grid.y: N up to 65535·64 rows
  Scratch<float> partial(size_t(chunks) * F);
  const dim3 grid(ceil_div(F, kBiasCols), chunks);
  if (vector)
    gelu_backward_bf16_bias_kernel<true><<<grid, kBiasThreads, 0, stream()>>>(
        dinp, recomputed, partial, inp, dout, N, F);
  else
    gelu_backward_bf16_bias_kernel<false><<<grid, kBiasThreads, 0, stream()>>>(
        dinp, recomputed, partial, inp, dout, N, F);
  GPT_CUDA_CHECK_LAUNCH();
  column_sum_finish<1>({{dbias}}, std::move(partial), chunks, F);
}

}  // namespace gpt::cuda
