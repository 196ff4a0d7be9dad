// LayerNorm over the channel axis.
#include <cmath>

#include "kernels/ops.h"
#include "train/backend/cpu/parallel.h"

namespace gpt::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int B, int T, int C) {
  parallel_for(size_t(B) * T, [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      const float* x = inp + r * C;
      float m = 0.0f;
      for (int c = 0; c < C; ++c) m += x[c];
      m /= C;
      float var = 0.0f;
      for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
      var /= C;
      float s = 1.0f / std::sqrt(var + kLayerNormEps);
      float* o = out + r * C;
      for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
      mean[r] = m;
      rstd[r] = s;
    }
  });
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C) {
  const size_t N = size_t(B) * T;
  parallel_for(N, [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      const float* x = inp + r * C;
      const float* d = dout + r * C;
      const float m = mean[r], s = rstd[r];
      // dnorm = d * weight; dx = s * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat))
      float dnorm_mean = 0.0f, dnorm_xhat_mean = 0.0f;
      for (int c = 0; c < C; ++c) {
        float dn = d[c] * weight[c];
        dnorm_mean += dn;
        dnorm_xhat_mean += dn * (x[c] - m) * s;
      }
      dnorm_mean /= C;
      dnorm_xhat_mean /= C;
      float* dx = dinp + r * C;
      for (int c = 0; c < C; ++c) {
        float xhat = (x[c] - m) * s;
        dx[c] += s * (d[c] * weight[c] - dnorm_mean - xhat * dnorm_xhat_mean);
      }
    }
  });
  // Parameter gradients: each thread owns a channel slice and walks rows in order.
  parallel_for(size_t(C), [&](size_t c0, size_t c1) {
    for (size_t r = 0; r < N; ++r) {
      const float* x = inp + r * C;
      const float* d = dout + r * C;
      const float m = mean[r], s = rstd[r];
      for (size_t c = c0; c < c1; ++c) {
        dweight[c] += d[c] * (x[c] - m) * s;
        dbias[c] += d[c];
      }
    }
  }, 16);
}

}  // namespace gpt::cpu
