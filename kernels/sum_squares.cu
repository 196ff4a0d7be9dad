#include "kernels/sum_squares.cuh"

#include <cstdint>
#include <stdexcept>

namespace gpt::cuda {
namespace {

constexpr size_t kChunk = size_t(1) << 16;
constexpr int kThreads = 512;

__device__ __forceinline__ double add_squares(double s, float4 v) {
  s = fma(double(v.x), double(v.x), s);
  s = fma(double(v.y), double(v.y), s);
  s = fma(double(v.z), double(v.z), s);
  return fma(double(v.w), double(v.w), s);
}

// Thread t adds the squares of the chunk's 16-byte words t, t + kThreads, ... in that order (then
// one of the last n % 4 elements), eight loads in flight: 2.2 -> ~3 TB/s against one 4-byte load
// per iteration. x must be 16-byte aligned (a cudaMalloc'd buffer is).
__global__ void chunk_sum_squares_kernel(double* partial, const float* x, size_t n) {
  constexpr int kUnroll = 8;
  __shared__ double sh[32];
  const size_t begin = size_t(blockIdx.x) * kChunk;
  const size_t end = begin + kChunk < n ? begin + kChunk : n;
  const size_t vec_end = begin + ((end - begin) & ~size_t(3));
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const size_t n4 = vec_end / 4;
  double s = 0.0;
  size_t i = begin / 4 + threadIdx.x;
  for (; i + (kUnroll - 1) * kThreads < n4; i += kUnroll * kThreads) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldcs(x4 + i + u * kThreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) s = add_squares(s, v[u]);
  }
  for (; i < n4; i += kThreads) s = add_squares(s, __ldcs(x4 + i));
  if (threadIdx.x < end - vec_end) {
    const double v = x[vec_end + threadIdx.x];
    s = fma(v, v, s);
  }
  s = block_sum(s, sh);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sum_partials_kernel(double* out, const double* partial, size_t chunks) {
  __shared__ double sh[32];
  double s = 0.0;
  for (size_t i = threadIdx.x; i < chunks; i += blockDim.x) s += partial[i];
  s = block_sum(s, sh);
  if (threadIdx.x == 0) *out = s;
}

}  // namespace

void sum_squares_to_device(double* out, const float* x, size_t n) {
  const size_t chunks = n == 0 ? 1 : (n + kChunk - 1) / kChunk;
  Scratch<double> partial(chunks);
  if (n == 0) {
    GPT_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double), stream()));
    return;
  }
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0)
    throw std::invalid_argument("sum_squares: x must be 16-byte aligned");
  chunk_sum_squares_kernel<<<unsigned(chunks), kThreads, 0, stream()>>>(partial, x, n);
  GPT_CUDA_CHECK_LAUNCH();
  sum_partials_kernel<<<1, 1024, 0, stream()>>>(out, partial, chunks);
  GPT_CUDA_CHECK_LAUNCH();
}

double sum_squares(const float* x, size_t n) {
  Scratch<double> out(1);
  sum_squares_to_device(out, x, n);
  double host = 0.0;
  GPT_CUDA_CHECK(cudaMemcpyAsync(&host, out.get(), sizeof(double), cudaMemcpyDeviceToHost, stream()));
  GPT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return host;
}

}  // namespace gpt::cuda
