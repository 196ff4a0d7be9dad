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

// dinp = gelu'(inp) · dout; recomputed (if not nullptr) = gelu(inp), the forward's output again.
__global__ void gelu_backward_bf16_kernel(bf16* dinp, bf16* recomputed, const bf16* inp,
                                          const bf16* dout, size_t N) {
  const size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i + kVec <= N) {
    const Bf16x8 x = *reinterpret_cast<const Bf16x8*>(inp + i);
    const Bf16x8 d = *reinterpret_cast<const Bf16x8*>(dout + i);
    Bf16x8 dx, y;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __bfloat1622float2(x.v[k]), g = __bfloat1622float2(d.v[k]);
      dx.v[k] = __floats2bfloat162_rn(gelu_grad(f.x) * g.x, gelu_grad(f.y) * g.y);
      y.v[k] = __floats2bfloat162_rn(gelu(f.x), gelu(f.y));
    }
    *reinterpret_cast<Bf16x8*>(dinp + i) = dx;
    if (recomputed) *reinterpret_cast<Bf16x8*>(recomputed + i) = y;
  } else {
    for (size_t j = i; j < N; ++j) {
      const float f = __bfloat162float(inp[j]);
      dinp[j] = __float2bfloat16_rn(gelu_grad(f) * __bfloat162float(dout[j]));
      if (recomputed) recomputed[j] = __float2bfloat16_rn(gelu(f));
    }
  }
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

}  // namespace gpt::cuda
