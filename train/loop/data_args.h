// The one place where gpt-train's command line becomes the data configuration (train/data reads
// only that).
#pragma once

#include <cstdint>

#include "train/data/data_config.h"
#include "train/loop/args.h"

namespace gpt {

// train_iters: the run's length, so index maps are sized like Megatron's. Throws
// suite::UsageError for a malformed --data-path or --cache-naming.
DataConfig data_config(const TrainArgs& args, int64_t train_iters);

}  // namespace gpt
