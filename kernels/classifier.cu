#include "kernels/classifier.cuh"

namespace gpt::cuda {
namespace {

constexpr int kThreads = 512;

__global__ void fused_classifier_kernel(float* dlogits, float* losses, const float* logits,
                                        const int* targets, float dloss, int V, int Vp) {
  __shared__ float sh[32];
  const size_t row = blockIdx.x;
  const float* x = logits + row * Vp;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, x[i]);
  m = block_max(m, sh);
  float s = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(x[i] - m);
  s = block_sum(s, sh);
  const float lse = m + logf(s);
  const int tgt = targets[row];
  // Every thread has read its x[i] above, but the in-place write below may overwrite x[tgt]
  // before thread 0 reads it: read it first, then barrier.
  const float xt = x[tgt];
  __syncthreads();
  if (threadIdx.x == 0) losses[row] = lse - xt;
  if (!dlogits) return;
  float* g = dlogits + row * Vp;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    const float p = expf(x[i] - lse);
    g[i] = dloss * (p - (i == tgt ? 1.0f : 0.0f));
  }
  for (int i = V + threadIdx.x; i < Vp; i += blockDim.x) g[i] = 0.0f;
}

__global__ void mean_kernel(float* mean, const float* x, int n) {
  __shared__ double sh[32];
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += double(x[i]);
  s = block_sum(s, sh);
  if (threadIdx.x == 0) *mean = float(s / n);
}

}  // namespace

void fused_classifier(float* dlogits, float* losses, const float* logits, const int* targets,
                      float dloss, int B, int T, int V, int Vp) {
  const int rows = B * T;
  if (rows == 0) return;
  fused_classifier_kernel<<<rows, kThreads, 0, stream()>>>(dlogits, losses, logits, targets, dloss,
                                                           V, Vp);
  GPT_CUDA_CHECK_LAUNCH();
}

void mean_to_device(float* mean, const float* x, int n) {
  mean_kernel<<<1, 1024, 0, stream()>>>(mean, x, n);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
