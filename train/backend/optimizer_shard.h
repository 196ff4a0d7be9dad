// The AdamW moments a backend keeps with the distributed optimizer: only this rank's ranges of the
// flat buffer, stored one after the other (compact), so that each rank holds 8 bytes per
// parameter / DP of moments instead of 8 per parameter.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gpt {

class OptimizerShard {
 public:
  OptimizerShard() = default;
  // ranges: [begin, end) of the flat buffer, ascending and disjoint; empty: everything (n).
  OptimizerShard(std::vector<std::pair<size_t, size_t>> ranges, size_t n) : ranges_(std::move(ranges)) {
    if (ranges_.empty()) ranges_.push_back({0, n});
    size_t at = 0;
    for (const auto& [lo, hi] : ranges_) {
      offsets_.push_back(at);
      at += hi - lo;
    }
    size_ = at;
  }
  size_t size() const { return size_; }  // elements of m (and of v)
  const std::vector<std::pair<size_t, size_t>>& ranges() const { return ranges_; }
  // Where flat element `begin` lives in the compact moments; [begin, end) must lie in one range.
  size_t compact(size_t begin, size_t end) const {
    for (size_t i = 0; i < ranges_.size(); ++i)
      if (begin >= ranges_[i].first && end <= ranges_[i].second)
        return offsets_[i] + (begin - ranges_[i].first);
    throw std::logic_error("AdamW range outside this rank's optimizer shard");
  }
  // Calls f(flat_begin, flat_end, compact_offset) for each range.
  template <class F>
  void each(F&& f) const {
    for (size_t i = 0; i < ranges_.size(); ++i) f(ranges_[i].first, ranges_[i].second, offsets_[i]);
  }

 private:
  std::vector<std::pair<size_t, size_t>> ranges_;
  std::vector<size_t> offsets_;
  size_t size_ = 0;
};

}  // namespace gpt
