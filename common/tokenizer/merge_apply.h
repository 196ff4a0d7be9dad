// Applying ranked merges to one pre-tokenized piece (spec §1.7, HF semantics: the pair with
// the lowest merge rank first, leftmost first among equal ranks). Two paths with identical
// results: a quadratic scan over a small array for short pieces (the common case, fastest),
// and a linked list plus a min-heap of (rank, position) with lazy invalidation for long ones,
// O(n log n), so 1 MB of one character still takes milliseconds.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/tokenizer/bpe_model.h"

namespace suite::bpe {

// Reusable buffers, one per thread.
struct MergeScratch {
  std::vector<TokenId> ids;
  std::vector<uint32_t> ranks;
  std::vector<uint32_t> prev, next;
  std::vector<uint64_t> heap;
};

// Pieces up to this many bytes take the array path.
inline constexpr size_t kShortPieceBytes = 64;

// Appends the ids of piece (raw bytes, non-empty) to out. Throws ToolError if a byte of the
// piece has no token in the vocabulary.
void apply_merges(const BpeModel& model, std::string_view piece, std::vector<TokenId>& out, MergeScratch& scratch);

// The two paths, exposed so tests can check they agree.
void apply_merges_short(const BpeModel& model, std::string_view piece, std::vector<TokenId>& out,
                        MergeScratch& scratch);
void apply_merges_long(const BpeModel& model, std::string_view piece, std::vector<TokenId>& out,
                       MergeScratch& scratch);

}  // namespace suite::bpe
