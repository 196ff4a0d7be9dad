// The data-selection flags gpt-train and build-indexmap share (Megatron's names), checked and
// applied in one place: --data-path or --data-args-path (with --split), or per-split data
// (--train/valid/test-data-path or --per-split-data-args-path), --split-rounding and
// --mid-level-dataset-surplus.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "common/dataset/gpt_dataset.h"

namespace suite::dataset {

struct DataFlags {
  std::vector<std::string> data_path;
  std::array<std::vector<std::string>, 3> split_data_path;  // train, valid, test
  std::string data_args_path, per_split_data_args_path;
  std::string split_rounding = "legacy";
  double mid_level_surplus = kMidLevelSurplus;
  bool mid_level_surplus_given = false;
};

// Whether any data source is given (gpt-train then takes no --mock-data).
bool has_data(const DataFlags& flags);

// UsageError for flags that exclude each other, per-split paths without a train path, an unknown
// rounding, or a surplus that is negative or given under legacy rounding. Reads no file.
void check_data_flags(const DataFlags& flags);

// Sets config's split rounding, surplus and blend (or per-split blends) from checked flags; the list
// files are read here (ToolError naming the file), a malformed blend is a UsageError.
void apply_data_flags(const DataFlags& flags, GptDatasetConfig& config);

}  // namespace suite::dataset
