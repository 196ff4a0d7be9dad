// GPT samples from Megatron .bin/.idx datasets (one prefix or a weighted blend): the datasets,
// index maps and blending indices of common/dataset/gpt_dataset (the cache policy build-indexmap
// uses). Sample j is tokens[0:L+1] as GPTDataset.
#pragma once

#include "train/data/data_setup.h"

namespace gpt {

// vocab_size: from --vocab-file / --vocab-size (0: none given → UsageError). Checks that every
// dataset exists and that its largest token id is below the vocabulary size.
DataSplits open_megatron_data(const suite::dataset::GptDatasetConfig& config, int vocab_size);

}  // namespace gpt
