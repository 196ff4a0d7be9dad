#include "kernels/classifier.cuh"

namespace gpt::cuda {
namespace {

constexpr int kThreads = 512;
// The bf16 kernel reads its row twice; large blocks keep a row's second read in L2.
constexpr int kBf16Threads = 1024;

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

// bf16 logits: one pass for the row maximum and the sum of exponentials (online rescaling once
// per 8-logit vector), one pass for the gradient; 8 logits (16 bytes) per load. Vp is a multiple
// of 8. The exponentials are ex2.approx (MUFU) of logits pre-scaled by log2(e): with expf the
// kernel was bound by instruction issue rather than by its memory traffic.
struct alignas(16) Bf16x8 {
  __nv_bfloat162 v[4];
};

constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ void unpack8(float v[8], const Bf16x8& u) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = __bfloat1622float2(u.v[k]);
    v[2 * k] = f.x;
    v[2 * k + 1] = f.y;
  }
}

__global__ void fused_classifier_bf16_kernel(bf16* dlogits, float* losses, const bf16* logits,
                                             const int* targets, float dloss, int V, int Vp) {
  __shared__ float sh[32];
  const size_t row = blockIdx.x;
  const bf16* x = logits + row * Vp;
  float m = -INFINITY, s = 0.0f;  // running maximum and sum of exp(v - m) over this thread's logits
  for (int i = threadIdx.x * 8; i < Vp; i += blockDim.x * 8) {
    float v[8];
    unpack8(v, *reinterpret_cast<const Bf16x8*>(x + i));
    float vmax = -INFINITY;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if (i + k >= V) v[k] = -INFINITY;  // the padded vocabulary takes no probability
      vmax = fmaxf(vmax, v[k]);
    }
    if (vmax == -INFINITY) continue;
    if (vmax > m) {
      s *= ex2((m - vmax) * kLog2e);  // m = -inf: s is 0 and stays 0
      m = vmax;
    }
    const float mb = m * kLog2e;
#pragma unroll
    for (int k = 0; k < 8; ++k) s += ex2(fmaf(v[k], kLog2e, -mb));
  }
  const float row_max = block_max(m, sh);
  s = block_sum(m == -INFINITY ? 0.0f : s * ex2((m - row_max) * kLog2e), sh);
  const float lse = row_max + logf(s);
  const int tgt = targets[row];
  const float xt = __bfloat162float(x[tgt]);
  __syncthreads();  // x[tgt] is read by all before the in-place writes below
  if (threadIdx.x == 0) losses[row] = lse - xt;
  if (!dlogits) return;
  bf16* g = dlogits + row * Vp;
  const float lb = lse * kLog2e;
  for (int i = threadIdx.x * 8; i < Vp; i += blockDim.x * 8) {
    float v[8];
    unpack8(v, *reinterpret_cast<const Bf16x8*>(x + i));
    float d[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) d[k] = i + k < V ? dloss * ex2(fmaf(v[k], kLog2e, -lb)) : 0.0f;
    if (unsigned(tgt - i) < 8u) {
#pragma unroll
      for (int k = 0; k < 8; ++k)
        if (tgt - i == k) d[k] -= dloss;  // constant indices keep d in registers
    }
    Bf16x8 o;
#pragma unroll
    for (int k = 0; k < 4; ++k) o.v[k] = __floats2bfloat162_rn(d[2 * k], d[2 * k + 1]);
    *reinterpret_cast<Bf16x8*>(g + i) = o;
  }
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

void fused_classifier_bf16(bf16* dlogits, float* losses, const bf16* logits, const int* targets,
                           float dloss, int rows, int V, int Vp) {
  if (rows == 0) return;
  fused_classifier_bf16_kernel<<<rows, kBf16Threads, 0, stream()>>>(dlogits, losses, logits,
                                                                    targets, dloss, V, Vp);
  GPT_CUDA_CHECK_LAUNCH();
}

void mean_to_device(float* mean, const float* x, int n) {
  mean_kernel<<<1, 1024, 0, stream()>>>(mean, x, n);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
