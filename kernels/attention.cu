#include "kernels/attention.cuh"

#include <cmath>
#include <optional>

#include "kernels/dropout_mask.h"

namespace gpt::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

// Element i of a [B,NH,T,hs] tensor: its offset in a [B,T,row] tensor whose first C columns
// hold the heads side by side (row = C for one tensor, 3C for q, k and v together).
__device__ __forceinline__ size_t head_major_to_row(size_t i, int T, int C, int NH, int row) {
  const int hs = C / NH;
  const int d = i % hs;
  const int t = (i / hs) % T;
  const int h = (i / (size_t(hs) * T)) % NH;
  const size_t b = i / (size_t(hs) * T * NH);
  return (b * T + t) * row + size_t(h) * hs + d;
}

// qkv [B,T,3C] -> q, k, v [B,NH,T,hs]
__global__ void permute_kernel(float* q, float* k, float* v, const float* qkv, int B, int T, int C,
                               int NH) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(B) * T * C) return;
  const size_t src = head_major_to_row(i, T, C, NH, 3 * C);
  q[i] = qkv[src];
  k[i] = qkv[src + C];
  v[i] = qkv[src + 2 * C];
}

// [B,NH,T,hs] -> out [B,T,C] (written)
__global__ void unpermute_kernel(float* out, const float* y, int B, int T, int C, int NH) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(B) * T * C) return;
  out[head_major_to_row(i, T, C, NH, C)] = y[i];
}

// dout [B,T,C] -> [B,NH,T,hs]
__global__ void permute_one_kernel(float* y, const float* x, int B, int T, int C, int NH) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(B) * T * C) return;
  y[i] = x[head_major_to_row(i, T, C, NH, C)];
}

// dq, dk, dv [B,NH,T,hs] -> dqkv [B,T,3C] (+=)
__global__ void unpermute_add_kernel(float* dqkv, const float* dq, const float* dk,
                                     const float* dv, int B, int T, int C, int NH) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(B) * T * C) return;
  const size_t dst = head_major_to_row(i, T, C, NH, 3 * C);
  dqkv[dst] += dq[i];
  dqkv[dst + C] += dk[i];
  dqkv[dst + 2 * C] += dv[i];
}

// In place on att: scores -> causal softmax(scale·scores); zeros above the diagonal.
__global__ void softmax_forward_kernel(float* att, int rows, int T, float scale) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = row % T;
  float* a = att + size_t(row) * T;
  float m = -INFINITY;
  for (int j = lane; j <= t; j += 32) m = fmaxf(m, a[j] * scale);
  m = warp_max(m);
  float s = 0.0f;
  for (int j = lane; j <= t; j += 32) {
    const float e = expf(a[j] * scale - m);
    a[j] = e;
    s += e;
  }
  const float inv = 1.0f / warp_sum(s);
  for (int j = lane; j < T; j += 32) a[j] = j <= t ? a[j] * inv : 0.0f;
}

// In place on datt: datt -> dscores = scale·att·(datt - sum_j att_j·datt_j); zeros above diagonal.
__global__ void softmax_backward_kernel(float* datt, const float* att, int rows, int T,
                                        float scale) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = row % T;
  const float* a = att + size_t(row) * T;
  float* d = datt + size_t(row) * T;
  float dot = 0.0f;
  for (int j = lane; j <= t; j += 32) dot += a[j] * d[j];
  dot = warp_sum(dot);
  for (int j = lane; j < T; j += 32) d[j] = j <= t ? a[j] * (d[j] - dot) * scale : 0.0f;
}

// out = keep ? in · scale : 0 over att [B·NH,T,T] under attention_keep's mask, one block per row
// (out may be in); heads maps the NH heads to the model's.
__global__ void attention_dropout_kernel(float* out, const float* in, int T, int NH,
                                         uint32_t threshold, float scale, DropKey key,
                                         HeadRange heads) {
  const size_t row = blockIdx.x;
  const uint64_t bh = heads.model_bh(row / T, NH), k = key.get();
  const uint32_t i = row % T;
  for (int j = threadIdx.x; j < T; j += blockDim.x) {
    const size_t idx = row * T + j;
    out[idx] = attention_keep(k, bh, i, j, threshold) ? in[idx] * scale : 0.0f;
  }
}

void attention_dropout(float* out, const float* in, int B, int NH, int T, float p, DropKey key,
                       HeadRange heads) {
  attention_dropout_kernel<<<unsigned(B * NH) * T, 256, 0, stream()>>>(
      out, in, T, NH, dropout_threshold(p), 1.0f / (1.0f - p), key, heads);
  GPT_CUDA_CHECK_LAUNCH();
}

// Batched over the B·NH heads; every matrix row-major, see the shapes at each call.
void batched_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* A,
                  int lda, long long sa, const float* Bm, int ldb, long long sb, float* Cm,
                  int ldc, long long sc, int batch) {
  const float alpha = 1.0f, beta = 0.0f;
  GPT_CUDA_CHECK(cublasSgemmStridedBatched(cublas(), ta, tb, m, n, k, &alpha, A, lda, sa, Bm, ldb,
                                           sb, &beta, Cm, ldc, sc, batch));
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       float dropout, DropKey key, HeadRange heads) {
  const int hs = C / NH, BH = B * NH;
  const size_t n = size_t(B) * T * C;
  if (n == 0) return;
  Scratch<float> q(n), k(n), v(n), y(n);
  permute_kernel<<<ceil_div(n, 256), 256, 0, stream()>>>(q, k, v, qkv, B, T, C, NH);
  GPT_CUDA_CHECK_LAUNCH();
  const long long sT = (long long)T * hs, sTT = (long long)T * T;
  // scores [T,T] = q [T,hs] · kᵀ   (column-major: scoresᵀ = k · qᵀ)
  batched_gemm(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, k, hs, sT, q, hs, sT, att, T, sTT, BH);
  const int rows = BH * T;
  softmax_forward_kernel<<<ceil_div(rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream()>>>(
      att, rows, T, 1.0f / std::sqrt(float(hs)));
  GPT_CUDA_CHECK_LAUNCH();
  // y [T,hs] = att [T,T] · v [T,hs]  (att dropped out in a copy under attention dropout)
  const float* probs = att;
  std::optional<Scratch<float>> dropped;
  if (dropout > 0.0f) {
    dropped.emplace(size_t(BH) * T * T);
    attention_dropout(*dropped, att, B, NH, T, dropout, key, heads);
    probs = *dropped;
  }
  batched_gemm(CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, v, hs, sT, probs, T, sTT, y, hs, sT, BH);
  unpermute_kernel<<<ceil_div(n, 256), 256, 0, stream()>>>(out, y, B, T, C, NH);
  GPT_CUDA_CHECK_LAUNCH();
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, float dropout, DropKey key, HeadRange heads) {
  const int hs = C / NH, BH = B * NH;
  const size_t n = size_t(B) * T * C;
  if (n == 0) return;
  Scratch<float> q(n), k(n), v(n), dy(n), dq(n), dk(n), dv(n), datt(size_t(BH) * T * T);
  permute_kernel<<<ceil_div(n, 256), 256, 0, stream()>>>(q, k, v, qkv, B, T, C, NH);
  GPT_CUDA_CHECK_LAUNCH();
  permute_one_kernel<<<ceil_div(n, 256), 256, 0, stream()>>>(dy, dout, B, T, C, NH);
  GPT_CUDA_CHECK_LAUNCH();
  const long long sT = (long long)T * hs, sTT = (long long)T * T;
  // datt [T,T] = dy [T,hs] · vᵀ
  batched_gemm(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, v, hs, sT, dy, hs, sT, datt, T, sTT, BH);
  // dv [T,hs] = attᵀ · dy; under attention dropout the dropped att, and datt through the mask
  const float* probs = att;
  std::optional<Scratch<float>> dropped;
  if (dropout > 0.0f) {
    dropped.emplace(size_t(BH) * T * T);
    attention_dropout(*dropped, att, B, NH, T, dropout, key, heads);
    attention_dropout(datt, datt, B, NH, T, dropout, key, heads);
    probs = *dropped;
  }
  batched_gemm(CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, dy, hs, sT, probs, T, sTT, dv, hs, sT, BH);
  const int rows = BH * T;
  softmax_backward_kernel<<<ceil_div(rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream()>>>(
      datt, att, rows, T, 1.0f / std::sqrt(float(hs)));
  GPT_CUDA_CHECK_LAUNCH();
  // dq [T,hs] = dscores [T,T] · k;  dk [T,hs] = dscoresᵀ · q
  batched_gemm(CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, k, hs, sT, datt, T, sTT, dq, hs, sT, BH);
  batched_gemm(CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, q, hs, sT, datt, T, sTT, dk, hs, sT, BH);
  unpermute_add_kernel<<<ceil_div(n, 256), 256, 0, stream()>>>(dqkv, dq, dk, dv, B, T, C, NH);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
