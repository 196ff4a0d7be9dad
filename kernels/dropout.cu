#include "kernels/dropout.cuh"
#include "kernels/dropout_mask.h"

namespace gpt::cuda {
namespace {

__global__ void dropout_kernel(float* out, const float* in, size_t n, uint32_t threshold,
                               float scale, uint64_t key) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = dropout_keep(key, i, threshold) ? in[i] * scale : 0.0f;
}

}  // namespace

void dropout_backward(float* dinp, const float* dout, size_t n, float p, uint64_t key) {
  if (n == 0) return;
  const size_t blocks = (n + 255) / 256;
  dropout_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream()>>>(
      dinp, dout, n, dropout_threshold(p), 1.0f / (1.0f - p), key);
  GPT_CUDA_CHECK_LAUNCH();
}

void dropout_forward(float* x, size_t n, float p, uint64_t key) {
  dropout_backward(x, x, n, p, key);
}

}  // namespace gpt::cuda
