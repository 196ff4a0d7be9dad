#include "common/tokenizer/merge_apply.h"

#include <algorithm>
#include <functional>

#include "common/cli/error.h"

namespace suite::bpe {

namespace {
constexpr uint32_t kNoRank = ~uint32_t{0};

[[noreturn]] void missing_byte(unsigned char b) {
  static const char* hex = "0123456789abcdef";
  throw ToolError(std::string("byte 0x") + hex[b >> 4] + hex[b & 15] + " has no token in the vocabulary");
}

void load_bytes(const BpeModel& model, std::string_view piece, std::vector<TokenId>& ids) {
  ids.resize(piece.size());
  for (size_t i = 0; i < piece.size(); ++i) {
    auto b = static_cast<unsigned char>(piece[i]);
    TokenId t = model.byte_token(b);
    if (t == kNoToken) missing_byte(b);
    ids[i] = t;
  }
}

inline uint32_t rank_of(const BpeModel& model, TokenId a, TokenId b) {
  const MergeValue* m = model.find_merge(a, b);
  return m ? m->rank : kNoRank;
}
}  // namespace

void apply_merges_short(const BpeModel& model, std::string_view piece, std::vector<TokenId>& out,
                        MergeScratch& sc) {
  auto& ids = sc.ids;
  auto& ranks = sc.ranks;
  load_bytes(model, piece, ids);
  size_t n = ids.size();
  ranks.resize(n);
  for (size_t i = 0; i + 1 < n; ++i) ranks[i] = rank_of(model, ids[i], ids[i + 1]);
  while (n > 1) {
    // Leftmost lowest rank.
    uint32_t best = kNoRank;
    size_t at = 0;
    for (size_t i = 0; i + 1 < n; ++i)
      if (ranks[i] < best) {
        best = ranks[i];
        at = i;
      }
    if (best == kNoRank) break;
    ids[at] = model.find_merge(ids[at], ids[at + 1])->merged;
    for (size_t i = at + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
    for (size_t i = at + 1; i + 2 < n; ++i) ranks[i] = ranks[i + 1];
    --n;
    if (at > 0) ranks[at - 1] = rank_of(model, ids[at - 1], ids[at]);
    if (at + 1 < n) ranks[at] = rank_of(model, ids[at], ids[at + 1]);
  }
  out.insert(out.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n));
}

void apply_merges_long(const BpeModel& model, std::string_view piece, std::vector<TokenId>& out,
                       MergeScratch& sc) {
  auto& ids = sc.ids;
  auto& prev = sc.prev;
  auto& next = sc.next;
  auto& heap = sc.heap;  // (rank << 32 | position), min-heap: leftmost lowest rank on top
  load_bytes(model, piece, ids);
  const uint32_t n = static_cast<uint32_t>(ids.size());
  constexpr uint32_t kEnd = ~uint32_t{0};
  prev.resize(n);
  next.resize(n);
  heap.clear();
  for (uint32_t i = 0; i < n; ++i) {
    prev[i] = i == 0 ? kEnd : i - 1;
    next[i] = i + 1 == n ? kEnd : i + 1;
    if (i + 1 < n)
      if (uint32_t r = rank_of(model, ids[i], ids[i + 1]); r != kNoRank) heap.push_back((uint64_t{r} << 32) | i);
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  auto push = [&](uint32_t pos) {
    uint32_t q = next[pos];
    if (q == kEnd) return;
    if (uint32_t r = rank_of(model, ids[pos], ids[q]); r != kNoRank) {
      heap.push_back((uint64_t{r} << 32) | pos);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    uint64_t top = heap.back();
    heap.pop_back();
    uint32_t pos = static_cast<uint32_t>(top), rank = static_cast<uint32_t>(top >> 32);
    // Stale if the symbol was absorbed (marked by ids = kNoToken) or its pair changed.
    if (ids[pos] == kNoToken) continue;
    uint32_t q = next[pos];
    if (q == kEnd) continue;
    const MergeValue* m = model.find_merge(ids[pos], ids[q]);
    if (!m || m->rank != rank) continue;
    ids[pos] = m->merged;
    ids[q] = kNoToken;
    next[pos] = next[q];
    if (next[q] != kEnd) prev[next[q]] = pos;
    if (prev[pos] != kEnd) push(prev[pos]);
    push(pos);
  }
  for (uint32_t i = 0; i != kEnd; i = next[i]) out.push_back(ids[i]);
}

void apply_merges(const BpeModel& model, std::string_view piece, std::vector<TokenId>& out, MergeScratch& sc) {
  if (piece.size() <= kShortPieceBytes) apply_merges_short(model, piece, out, sc);
  else apply_merges_long(model, piece, out, sc);
}

}  // namespace suite::bpe
