// Opens the train and validation sample sources named by the arguments and settles the
// vocabulary size, reporting every data problem before any compute.
#pragma once

#include <memory>

#include "train/data/sample_source.h"
#include "train/loop/args.h"

namespace gpt {

struct DataSplits {
  std::unique_ptr<SampleSource> train, valid;  // valid may be empty (size 0)
  int vocab_size = 0;
};

// train_iters: the run's length, so index maps can be sized like Megatron's.
DataSplits open_data(const TrainArgs& args, int64_t train_iters);

}  // namespace gpt
