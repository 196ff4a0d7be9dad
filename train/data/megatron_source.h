// GPT samples from Megatron .bin/.idx datasets (one prefix or a weighted blend), through the
// dataset library in common/dataset: --split by documents, index maps (doc_idx, sample_idx,
// shuffle_idx) loaded from the classic cache file names when present and built (and cached)
// otherwise, blends by Megatron's blending indices. Sample j is tokens[0:L+1] as GPTDataset.
#pragma once

#include "train/data/data_setup.h"

namespace gpt {

// vocab_size: from --vocab-file / --vocab-size (0: none given → UsageError). Checks that every
// dataset exists and that its largest token id is below the vocabulary size.
DataSplits open_megatron_data(const TrainArgs& args, int64_t train_iters, int vocab_size);

}  // namespace gpt
