// `--split` strings ("969, 30, 1", "90/5/5", "100") to train/valid/test sequence ranges.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace suite::dataset {

enum class SplitIndex { Train = 0, Valid = 1, Test = 2 };

// "train", "valid", "test" — the names used in cache file names and messages.
std::string_view split_name(SplitIndex s);

// A half-open range [begin, end) of sequence indices.
struct SequenceRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  bool operator==(const SequenceRange&) const = default;
};

// The three weights of a split string as Megatron's legacy code reads them: split on ',' (else
// '/'), Python float() of each part (surrounding blanks allowed), padded with 0.0 / cut to three,
// divided by their sequential sum. ToolError("--split: ...") for unparsable or all-zero weights.
std::array<double, 3> parse_split_weights(std::string_view split);

// Legacy Megatron (megatron/data/dataset_utils.get_train_valid_test_split_): each part rounded
// half-to-even separately, then every boundary shifted so the last equals `num_sequences`.
// Returns the four boundaries [0, a, b, num_sequences]; split i is [b[i], b[i+1]) and is not
// built when empty.
std::array<uint64_t, 4> split_boundaries_legacy(std::string_view split, uint64_t num_sequences);

// Range of split `which` from split_boundaries_legacy (empty range when that split is not built).
SequenceRange split_range_legacy(std::string_view split, uint64_t num_sequences, SplitIndex which);

// megatron/core: weights are the numbers matched by [.0-9]+, cumulative boundaries are rounded.
// Returns the range, and whether the split exists (zero weight = not built; core may build an
// empty range for a non-zero weight).
struct CoreSplit {
  bool exists = false;
  SequenceRange range;
};
std::array<CoreSplit, 3> split_ranges_core(std::string_view split, uint64_t num_sequences);

// Which Megatron turns --split's shares into ranges: legacy (megatron/data, the default here) or
// core (megatron/core/datasets, what pretrain_gpt.py reads with today). They can differ by one
// sequence at a boundary, which changes every shuffled index map of that split.
enum class SplitRounding { Legacy, Core };
// SplitRounding from "legacy" or "core"; ToolError("--split-rounding ...") otherwise.
SplitRounding parse_split_rounding(std::string_view name);
// Range of split `which` under that rounding (empty when the split is not built).
SequenceRange split_range(std::string_view split, uint64_t num_sequences, SplitIndex which, SplitRounding rounding);

}  // namespace suite::dataset
