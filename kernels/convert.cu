#include "kernels/convert.cuh"

#include "kernels/master_split.h"

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

__global__ void split_master_kernel(bf16* hi, uint16_t* lo, const float* in, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const MasterHalves h = split_master_bits(__float_as_uint(in[i]));
    hi[i] = __ushort_as_bfloat16(h.hi);
    lo[i] = h.lo;
  }
}

__global__ void join_master_kernel(float* out, const bf16* hi, const uint16_t* lo, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __uint_as_float(join_master_bits(__bfloat16_as_ushort(hi[i]), lo[i]));
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

void split_master(bf16* hi, uint16_t* lo, const float* in, size_t n) {
  if (n == 0) return;
  split_master_kernel<<<grid_for(n), 256, 0, stream()>>>(hi, lo, in, n);
  GPT_CUDA_CHECK_LAUNCH();
}

void join_master(float* out, const bf16* hi, const uint16_t* lo, size_t n) {
  if (n == 0) return;
  join_master_kernel<<<grid_for(n), 256, 0, stream()>>>(out, hi, lo, n);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
