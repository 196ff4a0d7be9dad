// Hidden dropout with the counter-based mask of dropout_mask.h.
#include "kernels/dropout_mask.h"
#include "kernels/ops.h"
#include "train/backend/cpu/parallel.h"

namespace gpt::cpu {

void dropout_backward(float* dinp, const float* dout, size_t n, float p, uint64_t key,
                      uint64_t first) {
  const uint32_t threshold = dropout_threshold(p);
  const float scale = 1.0f / (1.0f - p);
  parallel_for(n, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i)
      dinp[i] = dropout_keep(key, first + i, threshold) ? dout[i] * scale : 0.0f;
  }, size_t(1) << 14);
}

void dropout_forward(float* x, size_t n, float p, uint64_t key, uint64_t first) {
  dropout_backward(x, x, n, p, key, first);  // the same map: scale the kept, zero the rest
}

}  // namespace gpt::cpu
