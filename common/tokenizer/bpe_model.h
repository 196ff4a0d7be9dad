// An immutable byte-level BPE model: the vocabulary (id -> token bytes), the ranked merges
// and the special tokens. Shared read-only between threads (hold it in a shared_ptr);
// per-thread encoding state lives in suite::bpe::Encoder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/tokenizer/pair_map.h"

namespace suite::bpe {

inline constexpr TokenId kNoToken = ~TokenId{0};
inline constexpr std::string_view kEndOfText = "<|endoftext|>";

struct Merge {
  TokenId left, right, merged;
};

class BpeModel {
 public:
  // tokens[id] = raw bytes of token id (not the stand-in text). merges = (left id, right id)
  // in rank order; each merged token left+right must be in the vocabulary. Special tokens are
  // tokens that allow-special encoding cuts out of text; by default "<|endoftext|>" if present.
  // Throws suite::ToolError on inconsistent input (duplicate token, merge of unknown result).
  BpeModel(std::vector<std::string> tokens, const std::vector<std::pair<TokenId, TokenId>>& merges);

  // Loads GPT-2 / HF files (vocab.json + merges.txt, with or without the #version line).
  static std::shared_ptr<const BpeModel> load(const std::string& vocab_json_path,
                                              const std::string& merges_txt_path);

  size_t vocab_size() const { return tokens_.size(); }
  const std::string& token_bytes(TokenId id) const { return tokens_[id]; }
  const std::vector<std::string>& tokens() const { return tokens_; }
  std::optional<TokenId> find_token(std::string_view bytes) const;

  // Token of a single byte, or kNoToken if the vocabulary lacks it.
  TokenId byte_token(uint8_t b) const { return byte_tokens_[b]; }

  // The merge of the pair (left, right), or nullptr.
  const MergeValue* find_merge(TokenId left, TokenId right) const { return pairs_.find(left, right); }
  std::span<const Merge> merges() const { return merges_; }

  // Special tokens (text, id) recognised by allow-special encoding.
  const std::vector<std::pair<std::string, TokenId>>& special_tokens() const { return specials_; }
  // Marks an existing vocabulary entry as special (throws if it is not in the vocabulary).
  void add_special_token(std::string_view text);
  std::optional<TokenId> eot_token() const { return find_token(kEndOfText); }

  // Appends the bytes of ids to out; throws ToolError on an id outside the vocabulary.
  void decode_append(std::span<const TokenId> ids, std::string& out) const;
  std::string decode(std::span<const TokenId> ids) const;

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string_view, TokenId> ids_;  // views into tokens_
  TokenId byte_tokens_[256];
  PairMap pairs_;
  std::vector<Merge> merges_;
  std::vector<std::pair<std::string, TokenId>> specials_;
};

}  // namespace suite::bpe
