#include "kernels/vocab_parallel.cuh"

#include <cub/device/device_radix_sort.cuh>

namespace gpt::cuda {
namespace {

constexpr int kThreads = 512;

__global__ void vocab_embedding_forward_kernel(float* out, const int* inp, const float* wte,
                                               const float* wpe, int T, int C, int v0, int Vl,
                                               size_t total) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const size_t bt = i / C, c = i % C;
  const int tok = inp[bt] - v0;
  float x = tok >= 0 && tok < Vl ? wte[size_t(tok) * C + c] : 0.0f;
  if (wpe) x += wpe[(bt % T) * C + c];
  out[i] = x;
}

// Token ids to this rank's rows; Vl (past the last row) for the other ranks' tokens.
__global__ void local_tokens_kernel(int* local, int* rows, const int* inp, int BT, int v0, int Vl) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= BT) return;
  const int tok = inp[i] - v0;
  local[i] = tok >= 0 && tok < Vl ? tok : Vl;
  rows[i] = i;
}

// One block per sorted position; the first position of each token's run adds the run's rows in
// (b,t) order (the sort is stable).
__global__ void wte_backward_kernel(float* dwte, const float* dout, const int* tokens,
                                    const int* rows, int BT, int C, int Vl) {
  const int i = blockIdx.x;
  const int tok = tokens[i];
  if (tok >= Vl || (i > 0 && tokens[i - 1] == tok)) return;
  int end = i + 1;
  while (end < BT && tokens[end] == tok) ++end;
  float* dst = dwte + size_t(tok) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = dst[c];
    for (int j = i; j < end; ++j) acc += dout[size_t(rows[j]) * C + c];
    dst[c] = acc;
  }
}

__global__ void wpe_backward_kernel(float* dwpe, const float* dout, int B, int T, int C) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(T) * C) return;
  float acc = dwpe[i];
  for (int b = 0; b < B; ++b) acc += dout[size_t(b) * T * C + i];
  dwpe[i] = acc;
}

__device__ __forceinline__ float as_float(float x) { return x; }
__device__ __forceinline__ float as_float(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void store(float* p, float x) { *p = x; }
__device__ __forceinline__ void store(bf16* p, float x) { *p = __float2bfloat16(x); }

// One block per row: the valid columns are [0, Vv).
template <class X>
__global__ void ce_stats_kernel(float* stats, const X* logits, const int* targets, int Vl, int v0,
                                int Vv) {
  __shared__ float sh[32];
  const size_t row = blockIdx.x;
  const X* x = logits + row * Vl;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < Vv; i += blockDim.x) m = fmaxf(m, as_float(x[i]));
  m = block_max(m, sh);
  float s = 0.0f;
  if (m != -INFINITY)
    for (int i = threadIdx.x; i < Vv; i += blockDim.x) s += expf(as_float(x[i]) - m);
  s = block_sum(s, sh);
  if (threadIdx.x == 0) {
    const int t = targets[row] - v0;
    stats[row * 3 + 0] = m;
    stats[row * 3 + 1] = s;
    stats[row * 3 + 2] = t >= 0 && t < Vv ? as_float(x[t]) : 0.0f;
  }
}

template <class X>
__global__ void ce_finish_kernel(X* dlogits, float* losses, const X* logits, const int* targets,
                                 const float* gathered, int tp, float dloss, int rows, int Vl,
                                 int v0, int Vv) {
  const size_t row = blockIdx.x;
  // Every thread combines the ranks' statistics itself, in rank order (the same bits everywhere).
  float m = -INFINITY, xt = 0.0f;
  for (int r = 0; r < tp; ++r) {
    const float* s = gathered + (size_t(r) * rows + row) * 3;
    m = fmaxf(m, s[0]);
    xt += s[2];
  }
  float sum = 0.0f;
  for (int r = 0; r < tp; ++r) {
    const float* s = gathered + (size_t(r) * rows + row) * 3;
    if (s[0] != -INFINITY) sum += s[1] * expf(s[0] - m);
  }
  const float lse = m + logf(sum);
  const X* x = logits + row * Vl;
  if (threadIdx.x == 0) losses[row] = lse - xt;
  if (!dlogits) return;
  const int t = targets[row] - v0;
  X* g = dlogits + row * Vl;
  for (int i = threadIdx.x; i < Vv; i += blockDim.x) {
    const float p = expf(as_float(x[i]) - lse);
    store(g + i, dloss * (p - (i == t ? 1.0f : 0.0f)));
  }
  for (int i = Vv + threadIdx.x; i < Vl; i += blockDim.x) store(g + i, 0.0f);
}

int valid_columns(int Vl, int v0, int V) { return V - v0 < 0 ? 0 : V - v0 < Vl ? V - v0 : Vl; }

template <class X>
void ce_stats(float* stats, const X* logits, const int* targets, int rows, int Vl, int v0, int V) {
  if (rows == 0) return;
  ce_stats_kernel<<<rows, kThreads, 0, stream()>>>(stats, logits, targets, Vl, v0,
                                                   valid_columns(Vl, v0, V));
  GPT_CUDA_CHECK_LAUNCH();
}

template <class X>
void ce_finish(X* dlogits, float* losses, const X* logits, const int* targets,
               const float* gathered, int tp, float dloss, int rows, int Vl, int v0, int V) {
  if (rows == 0) return;
  ce_finish_kernel<<<rows, kThreads, 0, stream()>>>(dlogits, losses, logits, targets, gathered,
                                                    tp, dloss, rows, Vl, v0,
                                                    valid_columns(Vl, v0, V));
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace

void vocab_embedding_forward(float* out, const int* inp, const float* wte, const float* wpe,
                             int B, int T, int C, int v0, int Vl) {
  const size_t total = size_t(B) * T * C;
  if (total == 0) return;
  vocab_embedding_forward_kernel<<<ceil_div(total, 256), 256, 0, stream()>>>(out, inp, wte, wpe,
                                                                             T, C, v0, Vl, total);
  GPT_CUDA_CHECK_LAUNCH();
}

void vocab_embedding_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B,
                              int T, int C, int v0, int Vl) {
  const int BT = B * T;
  if (BT == 0 || C == 0) return;
  Scratch<int> local(BT), rows_in(BT), rows(BT), tokens(BT);
  local_tokens_kernel<<<ceil_div(BT, 256), 256, 0, stream()>>>(local, rows_in, inp, BT, v0, Vl);
  GPT_CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  GPT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, local.get(), tokens.get(),
                                                 rows_in.get(), rows.get(), BT, 0, 32, stream()));
  Scratch<unsigned char> temp(temp_bytes);
  GPT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, local.get(), tokens.get(),
                                                 rows_in.get(), rows.get(), BT, 0, 32, stream()));
  wte_backward_kernel<<<BT, 256, 0, stream()>>>(dwte, dout, tokens, rows, BT, C, Vl);
  GPT_CUDA_CHECK_LAUNCH();
  if (!dwpe) return;
  wpe_backward_kernel<<<ceil_div(size_t(T) * C, 256), 256, 0, stream()>>>(dwpe, dout, B, T, C);
  GPT_CUDA_CHECK_LAUNCH();
}

void vocab_ce_stats(float* stats, const float* logits, const int* targets, int rows, int Vl,
                    int v0, int V) {
  ce_stats(stats, logits, targets, rows, Vl, v0, V);
}

void vocab_ce_stats(float* stats, const bf16* logits, const int* targets, int rows, int Vl, int v0,
                    int V) {
  ce_stats(stats, logits, targets, rows, Vl, v0, V);
}

void vocab_ce_finish(float* dlogits, float* losses, const float* logits, const int* targets,
                     const float* gathered, int tp, float dloss, int rows, int Vl, int v0, int V) {
  ce_finish(dlogits, losses, logits, targets, gathered, tp, dloss, rows, Vl, v0, V);
}

void vocab_ce_finish(bf16* dlogits, float* losses, const bf16* logits, const int* targets,
                     const float* gathered, int tp, float dloss, int rows, int Vl, int v0, int V) {
  ce_finish(dlogits, losses, logits, targets, gathered, tp, dloss, rows, Vl, v0, V);
}

}  // namespace gpt::cuda
