#include "kernels/convert.cuh"

namespace gpt::cuda {
namespace {

__global__ void to_bf16_kernel(bf16* out, const float* in, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}

__global__ void to_fp16_kernel(fp16* out, const float* in, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2half_rn(in[i]);
}

__global__ void to_fp32_kernel(float* out, const bf16* in, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __bfloat162float(in[i]);
}

__global__ void fp16_to_fp32_kernel(float* out, const fp16* in, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __half2float(in[i]);
}

unsigned grid_for(size_t n) {
  const size_t blocks = (n + 255) / 256;
  return unsigned(blocks < 65536 ? blocks : 65536);  // grid-stride beyond that
}

}  // namespace

void to_bf16(bf16* out, const float* in, size_t n) {
  if (n == 0) return;
  to_bf16_kernel<<<grid_for(n), 256, 0, stream()>>>(out, in, n);
  GPT_CUDA_CHECK_LAUNCH();
}

void to_fp16(fp16* out, const float* in, size_t n) {
  if (n == 0) return;
  to_fp16_kernel<<<grid_for(n), 256, 0, stream()>>>(out, in, n);
  GPT_CUDA_CHECK_LAUNCH();
}

void to_fp32(float* out, const bf16* in, size_t n) {
  if (n == 0) return;
  to_fp32_kernel<<<grid_for(n), 256, 0, stream()>>>(out, in, n);
  GPT_CUDA_CHECK_LAUNCH();
}

void to_fp32(float* out, const fp16* in, size_t n) {
  if (n == 0) return;
  fp16_to_fp32_kernel<<<grid_for(n), 256, 0, stream()>>>(out, in, n);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
