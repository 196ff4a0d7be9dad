// Linear layer y = x·Wᵀ + b with W [OC, C].
#include "kernels/ops.h"
#include "train/backend/cpu/parallel.h"

namespace gpt::cpu {
namespace {
// Eight independent partial sums: the compiler vectorises this without -ffast-math, and the
// summation order is fixed (deterministic).
inline float dot(const float* x, const float* w, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int c = 0;
  for (; c + 8 <= n; c += 8)
    for (int k = 0; k < 8; ++k) acc[k] += x[c + k] * w[c + k];
  float tail = 0.0f;
  for (; c < n; ++c) tail += x[c] * w[c];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}
}  // namespace

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int B,
                    int T, int C, int OC) {
  const size_t N = size_t(B) * T;
  // Blocks of 4 rows reuse each weight row from cache 4 times.
  parallel_for((N + 3) / 4, [&](size_t lo, size_t hi) {
    for (size_t blk = lo; blk < hi; ++blk) {
      size_t r0 = blk * 4, r1 = r0 + 4 < N ? r0 + 4 : N;
      for (int o = 0; o < OC; ++o) {
        const float* w = weight + size_t(o) * C;
        const float b = bias ? bias[o] : 0.0f;
        for (size_t r = r0; r < r1; ++r) {
          const float* x = inp + r * C;
          out[r * OC + o] = dot(x, w, C) + b;
        }
      }
    }
  });
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC) {
  const size_t N = size_t(B) * T;
  if (dinp) {
    parallel_for(N, [&](size_t lo, size_t hi) {
      for (size_t r = lo; r < hi; ++r) {
        const float* d = dout + r * OC;
        float* dx = dinp + r * C;
        for (int o = 0; o < OC; ++o) {
          const float g = d[o];
          const float* w = weight + size_t(o) * C;
          for (int c = 0; c < C; ++c) dx[c] += g * w[c];
        }
      }
    });
  }
  // Each thread owns output channels o; rows are summed in order (deterministic).
  parallel_for(size_t(OC), [&](size_t lo, size_t hi) {
    for (size_t o = lo; o < hi; ++o) {
      float* dw = dweight + o * C;
      float db = 0.0f;
      for (size_t r = 0; r < N; ++r) {
        const float g = dout[r * OC + o];
        const float* x = inp + r * C;
        for (int c = 0; c < C; ++c) dw[c] += g * x[c];
        db += g;
      }
      if (dbias) dbias[o] += db;
    }
  });
}

}  // namespace gpt::cpu
