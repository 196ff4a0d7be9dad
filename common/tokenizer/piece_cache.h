// A bounded, direct-mapped cache of piece bytes -> token ids, one per thread (not shared).
// Holds pieces of up to kMaxKey bytes that encode to at most kMaxIds ids; a new piece simply
// replaces whatever shares its slot. Memory is fixed (kSlots * 64 bytes = 4 MiB), allocated
// on first use so that copying an empty Encoder stays cheap.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "common/tokenizer/pair_map.h"

namespace suite::bpe {

class PieceCache {
 public:
  static constexpr size_t kMaxKey = 22;
  static constexpr size_t kMaxIds = 10;
  static constexpr size_t kSlots = size_t{1} << 16;

  PieceCache() = default;
  PieceCache(const PieceCache&) {}  // copies start empty
  PieceCache& operator=(const PieceCache&) { return *this; }
  PieceCache(PieceCache&&) = default;
  PieceCache& operator=(PieceCache&&) = default;

  // Appends the cached ids of piece to out and returns true, or returns false.
  bool lookup(std::string_view piece, uint64_t hash, std::vector<TokenId>& out) const {
    if (!slots_) return false;
    const Slot& s = slots_[hash & (kSlots - 1)];
    if (s.key_len != piece.size() || std::memcmp(s.key, piece.data(), piece.size()) != 0) return false;
    out.insert(out.end(), s.ids, s.ids + s.n_ids);
    return true;
  }

  // Stores ids for piece if both fit.
  void store(std::string_view piece, uint64_t hash, const TokenId* ids, size_t n_ids) {
    if (piece.size() > kMaxKey || n_ids > kMaxIds) return;
    if (!slots_) slots_ = std::make_unique<Slot[]>(kSlots);
    Slot& s = slots_[hash & (kSlots - 1)];
    s.key_len = static_cast<uint8_t>(piece.size());
    s.n_ids = static_cast<uint8_t>(n_ids);
    std::memcpy(s.key, piece.data(), piece.size());
    std::memcpy(s.ids, ids, n_ids * sizeof(TokenId));
  }

  static bool cacheable(std::string_view piece) { return piece.size() <= kMaxKey; }

 private:
  struct Slot {
    uint8_t key_len = 0;  // 0 = empty (pieces are never empty)
    uint8_t n_ids = 0;
    char key[kMaxKey];
    TokenId ids[kMaxIds];
  };
  static_assert(sizeof(Slot) == 64);
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace suite::bpe
