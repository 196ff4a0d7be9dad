#include "kernels/gelu.cuh"

namespace gpt::cuda {
namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

__global__ void gelu_forward_kernel(float* out, const float* inp, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const float x = inp[i];
  out[i] = 0.5f * x * (1.0f + tanhf(kGeluScale * (x + 0.044715f * x * x * x)));
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const float x = inp[i];
  const float th = tanhf(kGeluScale * (x + 0.044715f * x * x * x));
  const float sech2 = 1.0f - th * th;
  const float grad =
      0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
  dinp[i] += grad * dout[i];
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

}  // namespace gpt::cuda
