// Samples Megatron asks each split for (legacy megatron/training.py
// build_train_valid_test_datasets):
//   train = --train-samples if given, else train_iters * global_batch_size
//   valid = (train_iters // eval_interval + 1) * eval_iters * global_batch_size
//   test  = eval_iters * global_batch_size
#pragma once

#include <cstdint>
#include <optional>

namespace suite::dataset {

struct SampleCounts {
  uint64_t train = 0;
  uint64_t valid = 0;
  uint64_t test = 0;
};

struct TrainingSchedule {
  uint64_t train_iters = 0;                  // --train-iters
  std::optional<uint64_t> train_samples;     // --train-samples (overrides train_iters for train)
  uint64_t global_batch_size = 0;            // --global-batch-size
  uint64_t eval_interval = 1000;             // --eval-interval
  uint64_t eval_iters = 100;                 // --eval-iters
};

// ToolError naming the flag for a zero --eval-interval / --global-batch-size or an overflow.
SampleCounts requested_sample_counts(const TrainingSchedule& schedule);

}  // namespace suite::dataset
