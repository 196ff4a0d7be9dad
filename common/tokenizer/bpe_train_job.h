// bpe-train's job: count the words of JSONL documents (every --json-keys field, text or sentences)
// or of plain text lines on --threads workers (one WordCounter each, merged at the end; memory grows
// with the number of distinct words, not with the corpus), merge with HF tokenizers' BpeTrainer
// rules (trainer.h), and write vocab.json and merges.txt atomically.
#pragma once

#include <string>

#include "common/cli/options.h"
#include "common/tokenizer/trainer.h"

namespace suite::bpe {

struct BpeTrainConfig {
  TrainerOptions trainer;   // its `progress` is set by the job
  std::string output_dir;
  bool lines = false;       // --input-format lines: each line with its "\n" is one sequence
};

void run_bpe_train(const CommonOptions& options, const BpeTrainConfig& config);

}  // namespace suite::bpe
