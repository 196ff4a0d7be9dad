#include "kernels/sum_squares.cuh"

namespace gpt::cuda {
namespace {

constexpr size_t kChunk = size_t(1) << 16;
constexpr int kThreads = 512;

__global__ void chunk_sum_squares_kernel(double* partial, const float* x, size_t n) {
  __shared__ double sh[32];
  const size_t begin = size_t(blockIdx.x) * kChunk;
  const size_t end = begin + kChunk < n ? begin + kChunk : n;
  double s = 0.0;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double v = x[i];
    s += v * v;
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
