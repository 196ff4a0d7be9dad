#include "kernels/sum_squares.cuh"

#include <cstdint>
#include <stdexcept>

namespace gpt::cuda {
namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ double add_squares(double s, float4 v) {
  s = fma(double(v.x), double(v.x), s);
  s = fma(double(v.y), double(v.y), s);
  s = fma(double(v.z), double(v.z), s);
  return fma(double(v.w), double(v.w), s);
}

// Thread t's part of a span's sum of squares: its 4-element groups t, t + kThreads, ... in that
// order, eight loads in flight, read as 16 bytes of fp32 (x) or, kBf16, 8 of bf16 (xh) and added
// alike. begin and end are multiples of 4.
template <bool kBf16>
__device__ double span_squares(const float* x, const bf16* xh, size_t begin, size_t end) {
  constexpr int kUnroll = 8;
  constexpr size_t kStride = 4 * kThreads;
  auto load4 = [&](size_t i) {
    if constexpr (kBf16) {
      const uint2 u = __ldcs(reinterpret_cast<const uint2*>(xh + i));
      return load_bf16x4(reinterpret_cast<const bf16*>(&u));
    } else {
      return __ldcs(reinterpret_cast<const float4*>(x + i));
    }
  };
  double s = 0.0;
  size_t i = begin + 4 * size_t(threadIdx.x);
  for (; i + (kUnroll - 1) * kStride < end; i += kUnroll * kStride) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load4(i + u * kStride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) s = add_squares(s, v[u]);
  }
  for (; i < end; i += kStride) s = add_squares(s, load4(i));
  return s;
}

// Block b adds the squares of span b (span_squares; element by element where the span's ends
// are not multiples of 4), its gradient in bf16 where the span says so (grad_bf16).
__global__ void span_sum_squares_kernel(double* partial, const float* x, const AdamWSpan* spans) {
  __shared__ double sh[32];
  const AdamWSpan sp = spans[blockIdx.x];
  const bf16* xh = sp.grad_bf16 ? reinterpret_cast<const bf16*>(x) + sp.half_base : nullptr;
  double s = 0.0;
  if (sp.begin % 4 != 0 || sp.end % 4 != 0) {
    for (size_t i = sp.begin + threadIdx.x; i < sp.end; i += kThreads) {
      const double v = xh ? double(__bfloat162float(xh[i])) : double(x[i]);
      s = fma(v, v, s);
    }
  } else {
    s = xh ? span_squares<true>(x, xh, sp.begin, sp.end) : span_squares<false>(x, xh, sp.begin, sp.end);
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

void sum_squares_spans_to_device(double* out, const float* x, const AdamWSpan* spans,
                                 int n_spans) {
  if (n_spans == 0) {
    GPT_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double), stream()));
    return;
  }
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0)
    throw std::invalid_argument("sum_squares_spans: x must be 16-byte aligned");
  Scratch<double> partial(n_spans);
  span_sum_squares_kernel<<<n_spans, kThreads, 0, stream()>>>(partial, x, spans);
  GPT_CUDA_CHECK_LAUNCH();
  sum_partials_kernel<<<1, 1024, 0, stream()>>>(out, partial, size_t(n_spans));
  GPT_CUDA_CHECK_LAUNCH();
}

namespace {
double to_host(const double* d) {
  double host = 0.0;
  GPT_CUDA_CHECK(cudaMemcpyAsync(&host, d, sizeof(double), cudaMemcpyDeviceToHost, stream()));
  GPT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return host;
}
}  // namespace

double sum_squares_spans(const float* x, const AdamWSpan* spans, int n_spans) {
  Scratch<double> out(1);
  sum_squares_spans_to_device(out, x, spans, n_spans);
  return to_host(out);
}

}  // namespace gpt::cuda
