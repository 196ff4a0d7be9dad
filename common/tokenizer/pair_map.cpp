#include "common/tokenizer/pair_map.h"

namespace suite::bpe {

void PairMap::reserve(size_t n) {
  size_t cap = 16;
  int bits = 4;
  while (cap < 2 * n + 2) {
    cap <<= 1;
    ++bits;
  }
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{kEmpty, {0, 0}});
  mask_ = cap - 1;
  shift_ = 64 - bits;
  size_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty) insert(static_cast<TokenId>(s.key >> 32), static_cast<TokenId>(s.key), s.value);
}

bool PairMap::insert(TokenId left, TokenId right, MergeValue value) {
  if (2 * (size_ + 1) > slots_.size()) reserve(slots_.size());  // doubles
  uint64_t key = pack(left, right);
  for (size_t i = slot(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) return false;
    if (s.key == kEmpty) {
      s = Slot{key, value};
      ++size_;
      return true;
    }
  }
}

}  // namespace suite::bpe
