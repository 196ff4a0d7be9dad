// The model cut into AdamW spans (kernels/adamw.cuh: adamw_update_spans), as plain C++: the CUDA
// backend uploads these tables, and its buffer plan (train/backend/cuda/buffer_plan.cpp) sizes
// them on machines without CUDA.
//
// The whole model in one launch: the flat buffers cut into spans of at most kAdamWSpan elements,
// each inside one tensor and carrying whether it decays (the same arithmetic per element as
// adamw_update, hence the same bits).
//
// grad_bf16: the span's tensor holds its gradient in bf16, packed into the first half of its
// own fp32 storage (the --bf16 backend's weight gradients of a step with one micro-batch, as
// autocast rounds them): element i's gradient is reinterpret_cast<const bf16*>(grads)[half_base
// + i], half_base being the tensor's first element (a multiple of 4, so that 4 of them are one
// 8-byte word). The update is the one of an fp32 gradient holding the same values.
//
// split_master: the span's fp32 master weights are held as the bf16 copy and a low half
// (kernels/master_split.h), not in the fp32 params: the --bf16 backend's matmul weights. Element
// i's low half is params_lo[i + lo_shift].
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gpt::cuda {

struct AdamWSpan {
  size_t begin, end;
  int decays;
  int grad_bf16 = 0;
  size_t half_base = 0;
  int split_master = 0;
  long long lo_shift = 0;
};
inline constexpr size_t kAdamWSpan = 1 << 16;

// tensors: [begin, end) of each tensor in the flat buffer; decays: its weight-decay flag.
inline std::vector<AdamWSpan> adamw_spans(const std::vector<std::pair<size_t, size_t>>& tensors,
                                          const std::vector<bool>& decays) {
  std::vector<AdamWSpan> spans;
  for (size_t t = 0; t < tensors.size(); ++t)
    for (size_t b = tensors[t].first; b < tensors[t].second; b += kAdamWSpan)
      spans.push_back({b, std::min(tensors[t].second, b + kAdamWSpan), decays[t] ? 1 : 0});
  return spans;
}

// spans with grad_bf16 set (and half_base) on those inside the given tensors, [begin, end) with
// begin a multiple of 4: the tensors whose gradients are packed in bf16.
inline std::vector<AdamWSpan> with_bf16_grads(
    std::vector<AdamWSpan> spans, const std::vector<std::pair<size_t, size_t>>& tensors) {
  for (AdamWSpan& sp : spans)
    for (const auto& [begin, end] : tensors)
      if (sp.begin >= begin && sp.begin < end) {
        if (begin % 4 != 0) throw std::invalid_argument("with_bf16_grads: tensor not 4-aligned");
        sp.grad_bf16 = 1;
        sp.half_base = begin;
      }
  return spans;
}

// spans with split_master and lo_shift set on those inside the given tensors ([begin, end)),
// tensor k's low halves at lo_shifts[k] from its elements.
inline std::vector<AdamWSpan> with_split_master(
    std::vector<AdamWSpan> spans, const std::vector<std::pair<size_t, size_t>>& tensors,
    const std::vector<long long>& lo_shifts) {
  if (lo_shifts.size() != tensors.size())
    throw std::invalid_argument("with_split_master: one shift per tensor");
  for (AdamWSpan& sp : spans)
    for (size_t k = 0; k < tensors.size(); ++k)
      if (sp.begin >= tensors[k].first && sp.begin < tensors[k].second) {
        sp.split_master = 1;
        sp.lo_shift = lo_shifts[k];
      }
  return spans;
}

// The shifts of low halves packed tensor after tensor (in the given order) from index 0.
inline std::vector<long long> packed_lo_shifts(
    const std::vector<std::pair<size_t, size_t>>& tensors) {
  std::vector<long long> shifts;
  long long packed = 0;
  for (const auto& [begin, end] : tensors) {
    shifts.push_back(packed - static_cast<long long>(begin));
    packed += static_cast<long long>(end - begin);
  }
  return shifts;
}

}  // namespace gpt::cuda
