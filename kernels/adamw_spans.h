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
// (kernels/master_split.h), not in the fp32 params: the --bf16 backend's matmul weights. The low
// halves of the split tensors are packed one after the other: element i's is params_lo[i - lo_base].
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
  size_t lo_base = 0;
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

// spans with split_master (and lo_base) set on those inside the given tensors ([begin, end),
// ascending), whose low halves are packed in that order.
inline std::vector<AdamWSpan> with_split_master(
    std::vector<AdamWSpan> spans, const std::vector<std::pair<size_t, size_t>>& tensors) {
  for (AdamWSpan& sp : spans) {
    size_t packed = 0;
    for (const auto& [begin, end] : tensors) {
      if (sp.begin >= begin && sp.begin < end) {
        sp.split_master = 1;
        sp.lo_base = begin - packed;
      }
      packed += end - begin;
    }
  }
  return spans;
}

}  // namespace gpt::cuda
