// Token + position embedding.
#include <cstring>

#include "kernels/ops.h"
#include "train/backend/cpu/parallel.h"

namespace gpt::cpu {

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C) {
  parallel_for(size_t(B) * T, [&](size_t lo, size_t hi) {
    for (size_t bt = lo; bt < hi; ++bt) {
      const float* te = wte + size_t(inp[bt]) * C;
      const float* pe = wpe + (bt % T) * C;
      float* o = out + bt * C;
      for (int c = 0; c < C; ++c) o[c] = te[c] + pe[c];
    }
  });
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C) {
  // Threads own channel slices, so repeated tokens never race and sums keep (b,t) order.
  const size_t BT = size_t(B) * T;
  parallel_for(size_t(C), [&](size_t c0, size_t c1) {
    for (size_t bt = 0; bt < BT; ++bt) {
      const float* d = dout + bt * C;
      float* te = dwte + size_t(inp[bt]) * C;
      for (size_t c = c0; c < c1; ++c) te[c] += d[c];
    }
  }, 16);
  parallel_for(size_t(T), [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      float* pe = dwpe + t * C;
      for (int b = 0; b < B; ++b) {
        const float* d = dout + (size_t(b) * T + t) * C;
        for (int c = 0; c < C; ++c) pe[c] += d[c];
      }
    }
  });
}

}  // namespace gpt::cpu
