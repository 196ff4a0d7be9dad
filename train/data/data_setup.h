// Opens the train and validation sample sources of a data configuration and settles the
// vocabulary size, reporting every data problem before any compute.
#pragma once

#include <memory>

#include "train/data/data_config.h"
#include "train/data/sample_source.h"

namespace gpt {

struct DataSplits {
  std::unique_ptr<SampleSource> train, valid;  // valid may be empty (size 0)
  int vocab_size = 0;
};

DataSplits open_data(const DataConfig& config);

}  // namespace gpt
