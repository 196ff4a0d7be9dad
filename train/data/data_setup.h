// Opens the train and validation sample sources of a data configuration and settles the
// vocabulary size, reporting every data problem before any compute.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "train/data/data_config.h"
#include "train/data/sample_source.h"

namespace gpt {

struct DataSplits {
  std::unique_ptr<SampleSource> train, valid;  // valid may be empty (size 0)
  int vocab_size = 0;
};

DataSplits open_data(const DataConfig& config);

// What a run reads, for its log: Megatron's "datasets target sizes" block, then a line per split
// naming its prefix or blend and how its range is cut (--split and its rounding, or whole).
std::vector<std::string> data_summary(const DataConfig& config);

}  // namespace gpt
