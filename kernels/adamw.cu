#include "kernels/adamw.cuh"

#include <cmath>

namespace gpt::cuda {
namespace {

__global__ void adamw_kernel(float* params, bf16* params_h, const float* grads, float* m, float* v,
                             size_t n,
                             float lr, float beta1, float beta2, float eps, float weight_decay,
                             float bc1, float bc2, float grad_scale) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float g = grads[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float upd = (mi / bc1) / (sqrtf(vi / bc2) + eps);
    const float p = params[i] - lr * (upd + weight_decay * params[i]);
    params[i] = p;
    if (params_h) params_h[i] = __float2bfloat16_rn(p);
  }
}

}  // namespace

void adamw_update(float* params, const float* grads, float* m, float* v, size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale, bf16* params_h) {
  if (n == 0) return;
  // Bias corrections on the host, in float like the CPU reference.
  const float bc1 = 1.0f - std::pow(beta1, float(step));
  const float bc2 = 1.0f - std::pow(beta2, float(step));
  const size_t blocks = (n + 255) / 256;
  adamw_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream()>>>(
      params, params_h, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2, grad_scale);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
