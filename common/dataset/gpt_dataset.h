// The GPT dataset of legacy Megatron (megatron/data/gpt_dataset.py, blendable_dataset.py), built in
// one place for build-indexmap and gpt-train: a configuration, one cache policy saying where index
// maps and blending indices are found and saved, and a builder returning per split the datasets,
// index maps and blending indices.
//
// Cache policy. A dataset's index map for one split has a home: with classic naming
// {cache}/{basename(prefix)}_{split}_indexmap_{N}ns_{L}sl_{seed}s_*_idx.npy when there is a cache
// folder, else {prefix}_{split}_indexmap_... next to the data; with md5 naming (Megatron 2023)
// {md5}.dsc and {md5}_*_idx.npy in the cache folder, else in {dirname(prefix)}/index-cache. The map
// is taken from the first of: its home; classic names next to the data; classic names in the cache
// folder; md5 names in {dirname(prefix)}/index-cache, then in the cache folder, whose files all
// exist, and must fit the data (index_map_mismatch). Otherwise it is built and saved at its home.
// A blend's indices blend_{weights as typed}_{size}_{dataset_index,dataset_sample_index}.npy have
// their home in the cache folder when there is one, else beside the first dataset; they are taken
// from there (when not saving, also from beside the first dataset), else built (and saved at home).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/dataset/blending.h"
#include "common/dataset/index_map.h"
#include "common/dataset/index_map_cache.h"
#include "common/dataset/indexed_dataset.h"
#include "common/dataset/sample_counts.h"
#include "common/dataset/split.h"

namespace suite::dataset {

enum class CacheNaming { Classic, Md5 };

struct GptDatasetConfig {
  std::vector<BlendComponent> blend;      // one prefix (weight 1) or weighted datasets
  std::vector<std::string> weight_words;  // a blend's weights as typed (its file names); else empty
  // --train-data-path, --valid-data-path, --test-data-path (when `blend` is empty): each split its
  // own prefix or blend, every dataset read whole (--split does not apply); an empty one is not built.
  std::array<std::vector<BlendComponent>, 3> split_blends;
  std::array<std::vector<std::string>, 3> split_weight_words;
  std::string split = "969, 30, 1";       // --split, verbatim (md5 descriptions hold it)
  SplitRounding split_rounding = SplitRounding::Legacy;
  double mid_level_surplus = kMidLevelSurplus;  // --mid-level-dataset-surplus (core blends only)
  uint32_t seq_length = 0;
  uint32_t seed = 1234;
  SampleCounts samples;   // requested per split; a split asking for 0 is not built
  std::string cache_dir;  // --data-cache-path; empty: none
  CacheNaming naming = CacheNaming::Classic;
  // Length of a blend's indices in every split; unset: Megatron's own (legacy: the sum of the
  // component counts; core: of their targets), or the split's requested count when
  // blend_size_requested (what a trainer reads).
  std::optional<uint64_t> blend_size;
  bool blend_size_requested = false;
};

// Fills blend and weight_words from --data-path words (one word may hold several, blank
// separated). ToolError("--data-path: ...") as parse_blend. Under config.split_rounding core (set it
// first) words that are not 'WEIGHT PREFIX' pairs are prefixes without weights, as Megatron-core
// reads them: a blend weighted by the datasets' sizes (weight_words then empty).
void set_data_path(GptDatasetConfig& config, std::span<const std::string> words);
// The same for one split's --{train,valid,test}-data-path; ToolError naming that flag.
void set_split_data_path(GptDatasetConfig& config, SplitIndex split, std::span<const std::string> words);
// Whether the splits read their own data (--train-data-path and its kin) rather than --data-path.
bool per_split_data(const GptDatasetConfig& config);
// The prefix or blend split s reads (empty: none), and its weights as typed.
const std::vector<BlendComponent>& split_blend(const GptDatasetConfig& config, SplitIndex s);
const std::vector<std::string>& split_weight_words(const GptDatasetConfig& config, SplitIndex s);
// The count of split s.
uint64_t split_samples(const SampleCounts& counts, SplitIndex s);
// Every prefix the configuration reads, once each, in the order open_gpt_datasets opens them.
std::vector<std::string> data_prefixes(const GptDatasetConfig& config);
// CacheNaming from "classic" or "md5"; ToolError("--cache-naming: ...") otherwise.
CacheNaming parse_cache_naming(const std::string& name);

// The places of the policy above in search order (the home first), and the home.
std::vector<IndexMapFiles> index_map_search(const GptDatasetConfig& config, const std::string& prefix,
                                            SplitIndex split, uint64_t num_samples);
IndexMapFiles index_map_home(const GptDatasetConfig& config, const std::string& prefix, SplitIndex split,
                             uint64_t num_samples);

struct GptBuildOptions {
  enum class Save { No, IfWritable, Yes };
  Save save_maps = Save::Yes;  // IfWritable: a read-only data directory just means no cache
  bool save_blend = false;
  bool force = false;          // build even where a cached map exists
  bool copy_home = false;      // a map found elsewhere is saved at its home too (build-indexmap)
  // An empty split range: an empty split (a trainer without validation data) instead of the
  // ToolError naming the split, its boundaries and --split.
  bool empty_split_ok = false;
};

struct ComponentMap {
  std::shared_ptr<const IndexMap> map;
  IndexMapFiles found;  // where it was loaded from; empty when built
  IndexMapFiles saved;  // where it was saved; empty when not
  SequenceRange range;  // the split's sequences of this dataset
  uint64_t requested = 0;
};

struct GptSplit {
  uint64_t requested = 0;
  std::vector<ComponentMap> maps;  // one per dataset; empty: the split is not built
  std::vector<std::shared_ptr<const IndexedDataset>> datasets;  // the datasets of those maps
  BlendingIndices blend;           // blends only
  std::array<std::string, 2> blend_files;  // dataset_index, dataset_sample_index; empty: not on disk
  bool blend_loaded = false;

  bool empty() const { return maps.empty(); }
  // Samples: the index map's for one dataset, the blending indices' for a blend.
  uint64_t size() const;
  // (dataset, sample of its index map) of sample j.
  std::pair<size_t, uint64_t> locate(uint64_t j) const;
};

struct GptDatasets {
  std::vector<std::shared_ptr<const IndexedDataset>> datasets;  // one per data_prefixes() entry
  std::array<GptSplit, 3> splits;                               // train, valid, test

  const GptSplit& split(SplitIndex s) const { return splits[static_cast<size_t>(s)]; }
  // Tokens of sample j of a split (L+1 of them) and where they come from; ToolError when j or the
  // sample it maps to is out of range.
  struct Sample {
    size_t dataset = 0;  // component of the split's blend
    uint64_t index = 0;  // sample of that dataset's index map
    std::vector<int64_t> tokens;
  };
  Sample sample(SplitIndex s, uint64_t j) const;
};

// What the builder did, a line per index map and blend: kept, copied or built, and where.
std::vector<std::string> build_report(const GptDatasetConfig& config, const GptDatasets& built);

// Opens (and validates) every dataset of data_prefixes(); ToolError naming the missing .bin/.idx.
std::vector<std::shared_ptr<const IndexedDataset>> open_gpt_datasets(const GptDatasetConfig& config);

// Index maps and blending indices of every split with requested samples, found or built (and
// saved) by the cache policy.
GptDatasets build_gpt_datasets(const GptDatasetConfig& config,
                               std::vector<std::shared_ptr<const IndexedDataset>> datasets,
                               const GptBuildOptions& options = {});

}  // namespace suite::dataset
