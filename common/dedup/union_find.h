// Union-find over dense indices 0..n-1 (path halving, union by size). Components do not depend on
// the order of unions; the root of a component does, so callers pick representatives themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace suite::dedup {

class UnionFind {
 public:
  explicit UnionFind(size_t n = 0) { reset(n); }
  void reset(size_t n);
  uint32_t find(uint32_t x);
  // Returns true when a and b were in different components.
  bool unite(uint32_t a, uint32_t b);
  size_t size() const { return parent_.size(); }
  uint32_t component_size(uint32_t x) { return size_[find(x)]; }

 private:
  std::vector<uint32_t> parent_;
  std::vector<uint32_t> size_;
};

}  // namespace suite::dedup
