// Concatenating datasets, like Megatron's tools/merge_datasets.py.
#pragma once

#include <string>
#include <vector>

namespace suite::dataset {

// Writes OUTPUT_PREFIX.{bin,idx} holding every input in order, documents keeping their
// boundaries. The dtype is the first input's; every other input must have the same dtype
// (ToolError naming the offending .idx). Requires at least one input.
void merge_datasets(const std::vector<std::string>& input_prefixes, const std::string& output_prefix);

// The prefixes merge_datasets.py would merge from directory `dir`: every regular file NAME.EXT
// (EXT = text from the last '.', as os.path.splitext) must have its partner (NAME.bin for .idx,
// else NAME.idx) or ToolError; unique prefixes "dir/NAME" in byte order (Python sorted()).
// Skipped: the merge's own output when it lies in `dir` (else a rerun would double the data), and
// the temporary and lock files of running or killed writers (".NAME.tmp.XXXXXX", "NAME.lock").
std::vector<std::string> dataset_prefixes_in_directory(const std::string& dir, const std::string& output_prefix = "");

}  // namespace suite::dataset
