// Text -> GPT-2 token ids. One Encoder per thread: it holds the shared read-only model plus
// per-thread state (merge scratch buffers and a bounded cache of frequent pieces). Copying an
// Encoder is cheap (the copy starts with an empty cache), so a tool makes one and copies it
// into each worker thread.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "common/tokenizer/bpe_model.h"
#include "common/tokenizer/merge_apply.h"
#include "common/tokenizer/piece_cache.h"

namespace suite::bpe {

struct EncodeOptions {
  // false (default, like OpenAI's encoder.py, tiktoken encode_ordinary and legacy Megatron):
  // "<|endoftext|>" in the text is ordinary text. true (like HF GPT2TokenizerFast): each
  // occurrence of a model special token becomes its id; text around it is encoded separately.
  bool allow_special = false;
};

class Encoder {
 public:
  explicit Encoder(std::shared_ptr<const BpeModel> model, EncodeOptions options = {});
  Encoder(const Encoder& other) : Encoder(other.model_, other.options_) {}
  Encoder& operator=(const Encoder& other);
  Encoder(Encoder&&) = default;
  Encoder& operator=(Encoder&&) = default;

  // Appends the ids of text (UTF-8; see common/unicode/utf8.h to repair invalid input).
  void encode(std::string_view text, std::vector<TokenId>& out);
  std::vector<TokenId> encode(std::string_view text);

  // Appends the ids of one pre-tokenized piece (no special-token handling).
  void encode_piece(std::string_view piece, std::vector<TokenId>& out);

  const BpeModel& model() const { return *model_; }
  const std::shared_ptr<const BpeModel>& model_ptr() const { return model_; }
  const EncodeOptions& options() const { return options_; }

 private:
  void encode_ordinary(std::string_view text, std::vector<TokenId>& out);

  std::shared_ptr<const BpeModel> model_;
  EncodeOptions options_;
  MergeScratch scratch_;
  PieceCache cache_;
};

}  // namespace suite::bpe
