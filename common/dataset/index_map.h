// GPT index mappings exactly as legacy Megatron builds them (megatron/data/gpt_dataset.py
// `_build_index_mappings`, helpers.cpp `build_sample_idx`), from one split's sequences:
//
//   doc_idx     int32 (E*n,)            sequence ids of E epochs, shuffled (all epochs at once, or
//                                       the first E-1 and the last separately: 80% rule)
//   sample_idx  int32 (num_samples+1, 2) (position in doc_idx, token offset) where sample k starts;
//                                       int64 only when doc_idx has more than 2^31-1 entries
//                                       (megatron/core's rule; legacy would overflow there)
//   shuffle_idx uint32 (num_samples,)   permutation of samples; int64 from 2^32-2 samples
//
// Sample k spans seq_length + 1 tokens from sample_idx[k] to sample_idx[k+1] inclusive.
// One RandomState(seed) per index map, drawn in the order doc_idx then shuffle_idx.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/dataset/npy.h"
#include "common/dataset/split.h"

namespace suite::dataset {

class RandomState;
class IndexedDataset;

struct IndexMapConfig {
  std::string split = "train";  // split name, for messages and cache names
  uint64_t num_samples = 0;     // N requested (see requested_sample_counts)
  uint32_t seq_length = 0;      // L (--seq-length)
  uint32_t seed = 1234;         // --seed
  // false reproduces Megatron before 2020-12-11 (no separate last epoch).
  bool separate_last_epoch = true;
};

// The numbers everything else follows from.
struct IndexMapPlan {
  uint64_t documents = 0;         // n = sequences in the split
  uint64_t tokens_per_epoch = 0;  // T
  uint64_t epochs = 0;            // E: smallest E >= 1 with (E*T - 1) / L >= N
  bool separate_last_epoch = false;
  uint64_t total_samples = 0;     // (E*T - 1) / L  (>= N)
  uint64_t first_shuffle_block = 0;  // samples shuffled together first (n_prev or total)
};

// Validates the inputs and computes the plan. ToolError naming the split, the counts and the
// flag to change for: an empty split, a split without tokens, seq_length 0, a range outside
// `sizes`, or an index map too large to build.
IndexMapPlan plan_index_map(std::span<const int32_t> sizes, SequenceRange documents, const IndexMapConfig& config);

struct IndexMap {
  IndexMapPlan plan;
  NpyArray doc_idx;
  NpyArray sample_idx;
  NpyArray shuffle_idx;

  // Samples available (= sample_idx rows - 1 = shuffle_idx size).
  uint64_t size() const { return plan.total_samples; }
  // (doc_idx position, offset) of row k of sample_idx, whatever its dtype.
  std::pair<int64_t, int64_t> sample_start(uint64_t k) const;
  // shuffle_idx[j], whatever its dtype.
  uint64_t shuffled(uint64_t j) const;
};

// Builds all three arrays.
IndexMap build_index_map(std::span<const int32_t> sizes, SequenceRange documents, const IndexMapConfig& config);

// The three steps, exposed for tests and for callers that need only one.
// doc_idx as an int32 array of shape (epochs * documents,).
NpyArray build_doc_idx(SequenceRange documents, uint64_t epochs, bool separate_last_epoch, RandomState& rng);
NpyArray build_sample_idx(std::span<const int32_t> sizes, std::span<const int32_t> doc_idx, uint32_t seq_length,
                          uint64_t epochs, uint64_t tokens_per_epoch);
NpyArray build_shuffle_idx(uint64_t first_block, uint64_t total, RandomState& rng);

// Why a loaded index map cannot belong to `documents` of a dataset with these sequence lengths
// (maps left from an earlier tokenization of the same prefix, or made for another split): a doc_idx
// entry outside the range, a sequence of the range not there once per epoch, a sample start
// outside its sequence or before the previous one, fewer samples than `min_samples`.
// Empty when the map fits, so that reading any of its samples stays inside the data.
std::string index_map_mismatch(const IndexMap& map, std::span<const int32_t> sizes, SequenceRange documents,
                               uint64_t min_samples);

// Tokens of sample j (after shuffling), L+1 of them, as Megatron's GPTDataset.__getitem__.
std::vector<int64_t> read_sample(const IndexMap& map, const IndexedDataset& data, uint64_t j);

}  // namespace suite::dataset
