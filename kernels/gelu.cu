#include "kernels/gelu.cuh"

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

__global__ void gelu_forward_kernel(float* out, const float* inp, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  out[i] = gelu(inp[i]);
}

__global__ void gelu_forward_bf16_kernel(bf16* out, const float* inp, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  out[i] = __float2bfloat16_rn(gelu(inp[i]));
}

__global__ void gelu_forward_fp16_kernel(fp16* out, const float* inp, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  out[i] = __float2half_rn(gelu(inp[i]));
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  dinp[i] += gelu_grad(inp[i]) * dout[i];
}

__global__ void gelu_backward_set_kernel(float* dinp, const float* inp, const float* dout, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  dinp[i] = __fmul_rn(gelu_grad(inp[i]), dout[i]);
}

}  // namespace

void gelu_forward(float* out, const float* inp, int N) {
  if (N <= 0) return;
  gelu_forward_kernel<<<ceil_div(N, 256), 256, 0, stream()>>>(out, inp, N);
  GPT_CUDA_CHECK_LAUNCH();
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int N) {
  if (N <= 0) return;
  gelu_backward_kernel<<<ceil_div(N, 256), 256, 0, stream()>>>(dinp, inp, dout, N);
  GPT_CUDA_CHECK_LAUNCH();
}

void gelu_forward_bf16(bf16* out, const float* inp, int N) {
  if (N <= 0) return;
  gelu_forward_bf16_kernel<<<ceil_div(N, 256), 256, 0, stream()>>>(out, inp, N);
  GPT_CUDA_CHECK_LAUNCH();
}

void gelu_forward_fp16(fp16* out, const float* inp, int N) {
  if (N <= 0) return;
  gelu_forward_fp16_kernel<<<ceil_div(N, 256), 256, 0, stream()>>>(out, inp, N);
  GPT_CUDA_CHECK_LAUNCH();
}

void gelu_backward_set(float* dinp, const float* inp, const float* dout, int N) {
  if (N <= 0) return;
  gelu_backward_set_kernel<<<ceil_div(N, 256), 256, 0, stream()>>>(dinp, inp, dout, N);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
