// GELU (tanh approximation), residual add, scaling.
#include <cmath>

#include "kernels/ops.h"
#include "train/backend/cpu/parallel.h"

namespace gpt::cpu {
namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
constexpr size_t kMinChunk = 1 << 14;               // elementwise work worth a thread
}  // namespace

void gelu_forward(float* out, const float* inp, int N) {
  parallel_for(size_t(N), [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      float x = inp[i];
      out[i] = 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + 0.044715f * x * x * x)));
    }
  }, kMinChunk);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int N) {
  parallel_for(size_t(N), [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      float x = inp[i];
      float u = kGeluScale * (x + 0.044715f * x * x * x);
      float th = std::tanh(u);
      float sech2 = 1.0f - th * th;
      float grad = 0.5f * (1.0f + th) +
                   0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
      dinp[i] += grad * dout[i];
    }
  }, kMinChunk);
}

void residual_forward(float* out, const float* a, const float* b, int N) {
  parallel_for(size_t(N), [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
  }, kMinChunk);
}

void residual_backward(float* da, float* db, const float* dout, int N) {
  parallel_for(size_t(N), [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      da[i] += dout[i];
      db[i] += dout[i];
    }
  }, kMinChunk);
}

void scale_inplace(float* x, size_t n, float s) {
  parallel_for(n, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) x[i] *= s;
  }, kMinChunk);
}

}  // namespace gpt::cpu
