// Byte-level BPE training that reproduces HF tokenizers' BpeTrainer merges exactly
// (spec §2.1-2.2): merge the pair with the highest count, ties to the smaller (left id,
// right id); alphabet ids sorted by stand-in code point; left-to-right non-overlapping
// replacement; a merged string that already exists reuses its id (the merge is still
// recorded); stop at vocab_size or when the best count is below min_frequency (or 0).
// Pair counts are 64-bit and updated incrementally with a lazily refreshed max-heap
// (spec §2.4), so results differ from HF only where HF's i32 pair counts overflow (> 2^31).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tokenizer/bpe_model.h"
#include "common/tokenizer/word_counter.h"

namespace suite::bpe {

struct TrainProgress {
  size_t merges_done;
  size_t merges_target;  // upper bound: vocab_size minus alphabet and specials
  uint64_t last_count;   // count of the most recent merge
};

struct TrainerOptions {
  // Final vocabulary size, special tokens included (GPT-2: 256 + 50,000 + 1 = 50,257).
  size_t vocab_size = 50257;
  // Only pairs seen at least this often are merged (HF semantics; 0 and 1 are the same).
  uint64_t min_frequency = 0;
  // Added to the vocabulary in this order (duplicates dropped). By default after the merges,
  // GPT-2 layout (bytes at 0..255, "<|endoftext|>" last); cut them out of the training text
  // with WordCounter's cut_out so they are not counted as words.
  std::vector<std::string> special_tokens = {std::string(kEndOfText)};
  // HF BpeTrainer layout instead: special tokens at ids 0..k-1, before the alphabet.
  bool specials_first = false;
  // true: all 256 bytes are in the alphabet (GPT-2, HF ByteLevelBPETokenizer).
  // false: only bytes that occur in the words (a bare HF BpeTrainer without initial alphabet).
  bool full_byte_alphabet = true;
  // Called every progress_every merges and once at the end.
  std::function<void(const TrainProgress&)> progress;
  size_t progress_every = 1000;
};

struct TrainResult {
  std::vector<std::string> tokens;                  // id -> raw bytes
  std::vector<std::pair<TokenId, TokenId>> merges;  // rank order
  std::vector<std::string> special_tokens;          // as added to tokens

  // An encoder-ready model (special tokens registered for allow-special encoding).
  std::shared_ptr<const BpeModel> model() const;
};

TrainResult train_bpe(const WordCounter& words, const TrainerOptions& options = {});

}  // namespace suite::bpe
