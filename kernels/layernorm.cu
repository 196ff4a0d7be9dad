#include "kernels/layernorm.cuh"

#include "kernels/column_sum.cuh"
#include "train/backend/ops.h"

namespace gpt::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ void store_as(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_as(bf16* p, float v) { *p = __float2bfloat16_rn(v); }

template <class Out>
__global__ void layernorm_forward_kernel(Out* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  float s = 0.0f;
  for (int c = lane; c < C; c += 32) s += x[c];
  const float m = warp_sum(s) / C;
  float v = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float d = x[c] - m;
    v += d * d;
  }
  const float r = 1.0f / sqrtf(warp_sum(v) / C + kLayerNormEps);  // as the CPU (rsqrtf is 2 ulp)
  Out* o = out + size_t(row) * C;
  for (int c = lane; c < C; c += 32) store_as(o + c, (x[c] - m) * r * weight[c] + bias[c]);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// dinp += ...; dinp_h (when not nullptr) gets the bf16 rounding of the new dinp.
__global__ void layernorm_backward_input_kernel(float* dinp, bf16* dinp_h, const float* dout,
                                                const float* inp,
                                                const float* weight, const float* mean,
                                                const float* rstd, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + size_t(row) * C;
  const float* d = dout + size_t(row) * C;
  const float m = mean[row], s = rstd[row];
  float dn_sum = 0.0f, dn_xhat_sum = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float dn = d[c] * weight[c];
    dn_sum += dn;
    dn_xhat_sum += dn * (x[c] - m) * s;
  }
  const float dn_mean = warp_sum(dn_sum) / C, dn_xhat_mean = warp_sum(dn_xhat_sum) / C;
  float* dx = dinp + size_t(row) * C;
  for (int c = lane; c < C; c += 32) {
    const float xhat = (x[c] - m) * s;
    const float v = dx[c] + s * (d[c] * weight[c] - dn_mean - xhat * dn_xhat_mean);
    dx[c] = v;
    if (dinp_h) dinp_h[size_t(row) * C + c] = __float2bfloat16_rn(v);
  }
}

struct LayerNormParamGrad {
  const float *dout, *inp, *mean, *rstd;
  int C;
  __device__ void operator()(int r, int c, float v[2]) const {
    const float d = dout[size_t(r) * C + c];
    v[0] = d * (inp[size_t(r) * C + c] - mean[r]) * rstd[r];
    v[1] = d;
  }
};

template <class Out>
void layernorm_forward_any(Out* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int B, int T, int C) {
  const int N = B * T;
  if (N == 0) return;
  layernorm_forward_kernel<Out><<<ceil_div(N, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream()>>>(
      out, mean, rstd, inp, weight, bias, N, C);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int B, int T, int C) {
  layernorm_forward_any(out, mean, rstd, inp, weight, bias, B, T, C);
}

void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int B, int T, int C) {
  layernorm_forward_any(out, mean, rstd, inp, weight, bias, B, T, C);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C, bf16* dinp_h) {
  const int N = B * T;
  if (N == 0) return;
  layernorm_backward_input_kernel<<<ceil_div(N, kWarpsPerBlock), kWarpsPerBlock * 32, 0,
                                    stream()>>>(dinp, dinp_h, dout, inp, weight, mean, rstd, N, C);
  GPT_CUDA_CHECK_LAUNCH();
  column_sum_add<2>(ColumnTargets<2>{{dweight, dbias}}, LayerNormParamGrad{dout, inp, mean, rstd, C},
                    N, C);
}

}  // namespace gpt::cuda
