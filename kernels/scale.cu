#include "kernels/scale.cuh"

namespace gpt::cuda {
namespace {

__global__ void scale_kernel(float* x, size_t n, float s) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] *= s;
}

}  // namespace

void scale_inplace(float* x, size_t n, float s) {
  if (n == 0) return;
  const size_t blocks = (n + 255) / 256;
  scale_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream()>>>(x, n, s);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
