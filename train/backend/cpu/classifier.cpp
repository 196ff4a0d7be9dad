// Softmax cross-entropy over the real vocabulary, gradient written in place.
#include <cmath>

#include "kernels/ops.h"
#include "train/backend/cpu/parallel.h"

namespace gpt::cpu {

void fused_classifier(float* dlogits, float* losses, const float* logits, const int* targets,
                      float dloss, int B, int T, int V, int Vp) {
  parallel_for(size_t(B) * T, [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      const float* x = logits + r * Vp;
      float maxv = -INFINITY;
      for (int i = 0; i < V; ++i) maxv = x[i] > maxv ? x[i] : maxv;
      double sum = 0.0;
      for (int i = 0; i < V; ++i) sum += std::exp(double(x[i] - maxv));
      const int tgt = targets[r];
      const float lse = maxv + float(std::log(sum));
      losses[r] = lse - x[tgt];
      if (!dlogits) continue;
      float* g = dlogits + r * Vp;  // may alias x: read each x[i] before writing g[i]
      for (int i = 0; i < V; ++i) {
        float p = std::exp(x[i] - lse);
        g[i] = dloss * (p - (i == tgt ? 1.0f : 0.0f));
      }
      for (int i = V; i < Vp; ++i) g[i] = 0.0f;
    }
  });
}

}  // namespace gpt::cpu
