// Shingles of normalised text, as 64-bit hashes (XXH3_64bits with a seed):
//   word n-grams: the text split on ASCII spaces (normalised text has single spaces), each n-gram
//                 being the bytes from its first word's start to its last word's end;
//   char n-grams: every window of n code points.
// A text with fewer than n words (or code points) has no shingles, as in datatrove: it gets no
// MinHash signature and is only ever removed by exact matching.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace suite::dedup {

enum class ShingleKind { kWord, kChar };

ShingleKind parse_shingle_kind(std::string_view name);  // "word" | "char"; throws UsageError
const char* shingle_kind_name(ShingleKind kind);

struct ShingleOptions {
  ShingleKind kind = ShingleKind::kWord;
  int n = 5;
  uint64_t seed = 1;
};

// Appends one hash per shingle position (duplicates included) to `out` (cleared first).
void shingle_hashes(std::string_view text, const ShingleOptions& options, std::vector<uint64_t>& out);

// The set of shingle hashes: sorted, without duplicates.
void shingle_set(std::string_view text, const ShingleOptions& options, std::vector<uint64_t>& out);

// |A ∩ B| / |A ∪ B| of two sorted duplicate-free sets; 0 when both are empty.
double jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);

}  // namespace suite::dedup
