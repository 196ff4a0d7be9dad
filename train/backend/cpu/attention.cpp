// Causal multi-head self-attention core (dropout(softmax(q·kᵀ/sqrt(hs))) · v), materialising
// att [B,NH,T,T] (the probabilities before dropout; the mask is regenerated from its key).
#include <cmath>
#include <vector>

#include "kernels/dropout_mask.h"
#include "kernels/ops.h"
#include "train/backend/cpu/parallel.h"

namespace gpt::cpu {

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                       float dropout, uint64_t key, HeadRange heads) {
  const int hs = C / NH;
  const size_t C3 = size_t(3) * C;
  const float scale = 1.0f / std::sqrt(float(hs));
  const bool drop = dropout > 0.0f;
  const uint32_t threshold = dropout_threshold(dropout);
  const float rkeep = 1.0f / (1.0f - dropout);
  parallel_for(size_t(B) * NH * T, [&](size_t lo, size_t hi) {
    for (size_t idx = lo; idx < hi; ++idx) {
      const size_t t = idx % T, h = (idx / T) % NH, b = idx / (size_t(T) * NH);
      const uint64_t mask_bh = heads.model_bh(b * NH + h, NH);
      const float* q = qkv + (b * T + t) * C3 + h * hs;
      float* a = att + ((b * NH + h) * T + t) * T;
      float maxv = -INFINITY;
      for (size_t t2 = 0; t2 <= t; ++t2) {
        const float* k = qkv + (b * T + t2) * C3 + C + h * hs;
        float s = 0.0f;
        for (int i = 0; i < hs; ++i) s += q[i] * k[i];
        s *= scale;
        a[t2] = s;
        if (s > maxv) maxv = s;
      }
      float sum = 0.0f;
      for (size_t t2 = 0; t2 <= t; ++t2) {
        a[t2] = std::exp(a[t2] - maxv);
        sum += a[t2];
      }
      const float inv = 1.0f / sum;
      for (size_t t2 = 0; t2 <= t; ++t2) a[t2] *= inv;
      for (size_t t2 = t + 1; t2 < size_t(T); ++t2) a[t2] = 0.0f;
      float* o = out + (b * T + t) * C + h * hs;
      for (int i = 0; i < hs; ++i) o[i] = 0.0f;
      for (size_t t2 = 0; t2 <= t; ++t2) {
        const float* v = qkv + (b * T + t2) * C3 + 2 * C + h * hs;
        const float z =
            drop && !attention_keep(key, mask_bh, t, t2, threshold) ? 0.0f : rkeep;
        const float w = drop ? a[t2] * z : a[t2];
        for (int i = 0; i < hs; ++i) o[i] += w * v[i];
      }
    }
  });
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH, float dropout, uint64_t key, HeadRange heads) {
  const int hs = C / NH;
  const size_t C3 = size_t(3) * C;
  const float scale = 1.0f / std::sqrt(float(hs));
  const bool drop = dropout > 0.0f;
  const uint32_t threshold = dropout_threshold(dropout);
  const float rkeep = 1.0f / (1.0f - dropout);
  // One (b, h) per task: it owns that head's q, k, v gradient columns for every position.
  parallel_for(size_t(B) * NH, [&](size_t lo, size_t hi) {
    std::vector<float> datt(T);
    for (size_t bh = lo; bh < hi; ++bh) {
      const size_t b = bh / NH, h = bh % NH;
      const uint64_t mask_bh = heads.model_bh(bh, NH);
      for (size_t t = 0; t < size_t(T); ++t) {
        const float* a = att + (bh * T + t) * T;
        const float* d = dout + (b * T + t) * C + h * hs;
        const float* q = qkv + (b * T + t) * C3 + h * hs;
        float* dq = dqkv + (b * T + t) * C3 + h * hs;
        // out = sum (a∘z)·v  →  dv += (a∘z)·d, datt = (d·v)∘z  (z unused without dropout)
        float dot = 0.0f;
        for (size_t t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (b * T + t2) * C3 + 2 * C + h * hs;
          float* dv = dqkv + (b * T + t2) * C3 + 2 * C + h * hs;
          const float z =
              drop && !attention_keep(key, mask_bh, t, t2, threshold) ? 0.0f : rkeep;
          const float w = drop ? a[t2] * z : a[t2];
          float s = 0.0f;
          for (int i = 0; i < hs; ++i) {
            s += d[i] * v[i];
            dv[i] += w * d[i];
          }
          if (drop) s *= z;
          datt[t2] = s;
          dot += a[t2] * s;
        }
        // softmax backward, then the q·k product
        for (size_t t2 = 0; t2 <= t; ++t2) {
          const float dpre = a[t2] * (datt[t2] - dot) * scale;
          const float* k = qkv + (b * T + t2) * C3 + C + h * hs;
          float* dk = dqkv + (b * T + t2) * C3 + C + h * hs;
          for (int i = 0; i < hs; ++i) {
            dq[i] += dpre * k[i];
            dk[i] += dpre * q[i];
          }
        }
      }
    }
  });
}

}  // namespace gpt::cpu
