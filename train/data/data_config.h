// What the trainer's data needs, filled from the command line in one place
// (train/loop/data_args.cpp): the vocabulary, and mock tokens or a Megatron GPT dataset.
#pragma once

#include <cstdint>
#include <string>

#include "common/dataset/gpt_dataset.h"

namespace gpt {

struct DataConfig {
  std::string vocab_file, merge_file;  // GPT-2 vocab.json and merges.txt; empty: none
  int vocab_size = 0;                  // 0: from vocab_file; checked against it when both are given
  bool mock = false;                   // seeded random tokens instead of a dataset
  int64_t mock_samples = 0;            // distinct mock samples; 0: as many as the run reads
  uint64_t seed = 1234;                // mock tokens (the dataset's seed is gpt.seed)
  // The dataset: blend, split, sequence length (mock data too), train and valid sample counts,
  // cache folder and naming.
  suite::dataset::GptDatasetConfig gpt;
};

}  // namespace gpt
