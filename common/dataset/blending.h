// Blended datasets as Megatron builds them: legacy (dataset_utils.get_datasets_weights_and_num_samples,
// BlendableDataset) or Megatron-core (BlendedMegatronDatasetBuilder, BlendedDataset); both draw the
// indices with helpers.cpp build_blending_indices.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dataset/split.h"

namespace suite::dataset {

struct BlendComponent {
  double weight = 1.0;
  std::string prefix;
};

// "--data-path" words: one prefix (weight 1.0, no blending) or "w1 p1 w2 p2 ..." pairs; Python
// float() for weights, prefixes stripped. ToolError("--data-path: ...") for an odd count of
// words, an unparsable or negative weight, or all-zero weights.
std::vector<BlendComponent> parse_blend(std::span<const std::string> words);
// Same, from one string split on whitespace: "0.3 pathA 0.7 pathB".
std::vector<BlendComponent> parse_blend(std::string_view text);

// Whether Megatron-core reads the words as 'WEIGHT PREFIX' pairs (get_blend_from_list): an even
// count whose every other word is a number. Otherwise they are prefixes alone.
bool words_are_weighted(std::span<const std::string> words);
// The words as prefixes without weights (Megatron-core's unweighted blend; weight 0 each).
std::vector<BlendComponent> parse_prefixes(std::span<const std::string> words);

// numpy.sum of a float64 vector (pairwise summation, numpy >= 1.9 loops_utils), §4.8.
double numpy_sum(std::span<const double> values);

// First normalisation (Python loop: sequential sum, then w / sum) — what sample counts use.
std::vector<double> normalize_weights_python(std::span<const double> weights);
// BlendableDataset's second normalisation (w / numpy.sum(w)) — what the indices use.
std::vector<double> normalize_weights_numpy(std::span<const double> weights);

// Legacy per-component sample counts: ceil(N * w_i * 1.005) with the once-normalised weights.
std::vector<uint64_t> blend_component_samples(uint64_t num_samples, std::span<const double> normalized_weights);
// Megatron-core's share of N each component is to give: ceil(N * w_i).
std::vector<uint64_t> blend_component_targets(uint64_t num_samples, std::span<const double> normalized_weights);
// Megatron-core's per-component build counts: ceil(target_i * (1 + surplus)), surplus its
// mid_level_dataset_surplus (default 0.005).
constexpr double kMidLevelSurplus = 0.005;
std::vector<uint64_t> blend_component_samples_core(std::span<const uint64_t> targets,
                                                   double surplus = kMidLevelSurplus);

struct BlendingIndices {
  std::vector<int16_t> dataset_index;         // saved as '<i2'
  std::vector<int64_t> dataset_sample_index;  // saved as '<i8'
};

// helpers.cpp build_blending_indices: for each sample pick the component furthest behind its
// share (ties to the lowest index). `weights` are the twice-normalised weights.
// ToolError for more than 32767 components.
BlendingIndices build_blending_indices(std::span<const double> weights, uint64_t size);

// Everything a blended split needs, from parsed components and the requested sample count, under
// the rounding rule --split-rounding names (legacy: the first normalisation is a Python loop and
// the blend is as long as its components together; core: both are numpy's, and the blend is as long
// as the components' targets together).
struct BlendPlan {
  std::vector<double> weights;          // normalised once (sample counts)
  std::vector<double> blend_weights;    // normalised twice (indices)
  std::vector<uint64_t> component_samples;
  uint64_t size = 0;                    // Megatron's own length of the blending indices
};
BlendPlan plan_blend(std::span<const BlendComponent> components, uint64_t num_samples,
                     SplitRounding rounding = SplitRounding::Legacy, double surplus = kMidLevelSurplus);
// Megatron-core's blend of prefixes without weights: each component one epoch of its split, weighted
// by its samples (numpy-normalised once), min(N, their sum) blended.
BlendPlan plan_sized_blend(std::span<const uint64_t> component_sizes, uint64_t num_samples);

}  // namespace suite::dataset
