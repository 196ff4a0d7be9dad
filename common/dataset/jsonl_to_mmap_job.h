// jsonl-to-mmap's job, in one of three modes: convert JSONL to Megatron .bin/.idx datasets
// (preprocess.h, with the dtype and the id bound chosen here from the vocabulary, --vocab-size or
// --dtype), merge datasets (merge.h), or print a dataset's figures (--info).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cli/options.h"

namespace suite::dataset {

struct JsonlToMmapConfig {
  enum class Mode { kConvert, kMerge, kInfo };
  Mode mode = Mode::kConvert;
  // kConvert
  std::string output_prefix;
  bool append_eod = false;
  bool split_sentences = false;
  uint64_t log_interval = 1000;
  std::string vocab_file, merge_file;  // empty: ids input only (with --info: no text shown)
  std::optional<uint64_t> vocab_size;
  std::optional<uint32_t> eod_id;
  std::optional<std::string> dtype;    // a numpy name; default: Megatron's rule
  // kMerge: the output, then the inputs (prefixes, or one directory)
  std::vector<std::string> merge_words;
  // kInfo
  std::string info_prefix;
  std::optional<uint64_t> show_doc;
};

void run_jsonl_to_mmap(const CommonOptions& options, const JsonlToMmapConfig& config);

}  // namespace suite::dataset
