// AdamW update and the deterministic sum of squares behind the global gradient norm.
#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "train/backend/cpu/parallel.h"

namespace gpt::cpu {

void adamw_update(float* params, const float* grads, float* m, float* v, size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale) {
  const float bc1 = 1.0f - std::pow(beta1, float(step));
  const float bc2 = 1.0f - std::pow(beta2, float(step));
  parallel_for(n, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      const float g = grads[i] * grad_scale;
      const float mi = beta1 * m[i] + (1.0f - beta1) * g;
      const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
      m[i] = mi;
      v[i] = vi;
      const float upd = (mi / bc1) / (std::sqrt(vi / bc2) + eps);
      params[i] -= lr * (upd + weight_decay * params[i]);
    }
  }, 1 << 14);
}

double sum_squares(const float* x, size_t n) {
  // Fixed chunks (not per-thread ranges) so the summation order never depends on thread count.
  constexpr size_t kChunk = 1 << 16;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks, 0.0);
  parallel_for(chunks, [&](size_t lo, size_t hi) {
    for (size_t c = lo; c < hi; ++c) {
      const size_t end = (c + 1) * kChunk < n ? (c + 1) * kChunk : n;
      double s = 0.0;
      for (size_t i = c * kChunk; i < end; ++i) s += double(x[i]) * x[i];
      partial[c] = s;
    }
  });
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace gpt::cpu
