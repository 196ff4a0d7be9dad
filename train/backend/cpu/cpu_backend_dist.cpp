// The CPU backend's data-parallel hooks (backend.h): host buffers for the TCP communicator.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "train/backend/cpu/cpu_backend.h"
#include "kernels/ops.h"

namespace gpt {
namespace {

// Round to nearest even, as the CUDA backend's __float2bfloat16 (NaN stays NaN).
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

Backend::FlatBuffers CpuBackend::flat_buffers() {
  FlatBuffers b;
  b.params = params_.data();
  b.grads = grads_.data();
  return b;
}

double CpuBackend::grad_sum_squares(size_t begin, size_t end) {
  return cpu::sum_squares(grads_.data() + begin, end - begin);
}

void CpuBackend::adamw_range(const AdamWConfig& c, float lr, int step, float grad_scale,
                             size_t begin, size_t end) {
  // Tensor by tensor, as adamw_step: the weight decay is the tensor's.
  for (const TensorInfo& t : layout_.tensors()) {
    const size_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.numel);
    if (lo >= hi) continue;
    const size_t at = shard_.compact(lo, hi);
    cpu::adamw_update(params_.data() + lo, grads_.data() + lo, m_.data() + at, v_.data() + at,
                      hi - lo, lr, c.beta1, c.beta2, c.eps, t.decays() ? c.weight_decay : 0.0f,
                      step, grad_scale);
  }
}

void* CpuBackend::grads_to_bf16(size_t begin, size_t end, size_t capacity) {
  if (bf16_scratch_.size() < capacity) bf16_scratch_.resize(capacity);
  for (size_t i = begin; i < end; ++i) bf16_scratch_[i - begin] = to_bf16(grads_[i]);
  return bf16_scratch_.data();
}

void CpuBackend::grads_from_bf16(const void* scratch, size_t begin, size_t end) {
  const auto* h = static_cast<const uint16_t*>(scratch);
  for (size_t i = begin; i < end; ++i) grads_[i] = from_bf16(h[i - begin]);
}

float* CpuBackend::gather_staging(size_t n) {
  if (staging_.size() < n) staging_.resize(n);
  return staging_.data();
}

void CpuBackend::params_from_staging(const float* staging, int D, size_t m, size_t begin,
                                     size_t stride, bool) {
  for (int q = 0; q < D; ++q) {
    const size_t at = begin + size_t(q) * stride;
    if (at >= layout_.total()) break;
    const size_t n = std::min(m, layout_.total() - at);
    std::copy(staging + size_t(q) * m, staging + size_t(q) * m + n, params_.begin() + at);
  }
}

void CpuBackend::read_staging(float* host, const float* staging, size_t n) {
  std::copy(staging, staging + n, host);
}

}  // namespace gpt
