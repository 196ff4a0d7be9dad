// Open-addressing hash map from a token pair (left, right) to its merge (rank, merged id).
// Read-only after construction; linear probing over a power-of-two table at load <= 1/2 with
// a multiplicative (Fibonacci) hash, so a lookup is usually one cache miss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace suite::bpe {

using TokenId = uint32_t;

struct MergeValue {
  uint32_t rank;
  TokenId merged;
};

class PairMap {
 public:
  explicit PairMap(size_t expected = 0) { reserve(expected); }

  // Inserts (left,right) -> value unless the pair is already present; returns false then.
  bool insert(TokenId left, TokenId right, MergeValue value);

  const MergeValue* find(TokenId left, TokenId right) const {
    uint64_t key = pack(left, right);
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    MergeValue value;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(TokenId l, TokenId r) { return (uint64_t{l} << 32) | r; }
  size_t slot(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  void reserve(size_t n);

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace suite::bpe
