// Named counts of outcomes ("kept", "skipped: invalid JSON", ...), kept in first-seen order so that
// summaries read the same on every run. Small: a handful of names per tool.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace suite {

class Counters {
 public:
  void add(std::string_view name, uint64_t n = 1) {
    for (auto& [k, v] : items_)
      if (k == name) {
        v += n;
        return;
      }
    items_.emplace_back(std::string(name), n);
  }
  void merge(const Counters& other) {
    for (const auto& [k, v] : other.items_) add(k, v);
  }
  uint64_t get(std::string_view name) const {
    for (const auto& [k, v] : items_)
      if (k == name) return v;
    return 0;
  }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }
  const std::vector<std::pair<std::string, uint64_t>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, uint64_t>> items_;
};

}  // namespace suite
