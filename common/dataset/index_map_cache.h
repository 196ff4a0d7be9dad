// Where Megatron caches index maps, and saving/loading the three .npy files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/dataset/index_map.h"

namespace suite::dataset {

struct IndexMapFiles {
  std::string doc_idx;
  std::string sample_idx;
  std::string shuffle_idx;
  std::string description;  // md5 scheme only: the .dsc file; empty for classic names
};

// Classic names (Megatron <= 2023-05-18), next to the data:
// {prefix}_{split}_indexmap_{N}ns_{L}sl_{seed}s_{doc,sample,shuffle}_idx.npy
IndexMapFiles classic_index_map_files(std::string_view data_prefix, std::string_view split, uint64_t num_samples,
                                      uint32_t seq_length, uint32_t seed);

// md5 scheme (Megatron 2023-05-19 ... 2023-10): the description text whose md5 names the files.
// `split_string` is the --split argument verbatim.
std::string md5_index_map_description(std::string_view data_prefix, std::string_view split, uint64_t num_samples,
                                      uint32_t seq_length, uint32_t seed, std::string_view split_string);
// {dir}/{md5}.dsc, {dir}/{md5}_{doc,sample,shuffle}_idx.npy for that description.
IndexMapFiles md5_index_map_files(std::string_view cache_dir, std::string_view description);
// The default md5 cache directory: {dirname(data_prefix)}/index-cache.
std::string default_index_cache_dir(std::string_view data_prefix);

// True when every file of `files` exists (a cache hit).
bool index_map_files_exist(const IndexMapFiles& files);

// Writes the three arrays (atomically, each) and, when `files.description` is set, the text.
void save_index_map(const IndexMap& map, const IndexMapFiles& files, std::string_view description = {});

// Loads the three arrays, checking their dtypes and shapes (ToolError naming the file). Of the
// plan only total_samples is known from the arrays; the other fields stay 0.
IndexMap load_index_map(const IndexMapFiles& files);

}  // namespace suite::dataset
