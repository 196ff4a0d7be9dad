#include "common/tokenizer/bpe_model.h"

#include "common/cli/error.h"
#include "common/tokenizer/vocab_io.h"

namespace suite::bpe {

BpeModel::BpeModel(std::vector<std::string> tokens,
                   const std::vector<std::pair<TokenId, TokenId>>& merges)
    : tokens_(std::move(tokens)), pairs_(merges.size()) {
  ids_.reserve(tokens_.size());
  for (TokenId id = 0; id < tokens_.size(); ++id) {
    if (tokens_[id].empty()) throw ToolError("token " + std::to_string(id) + " is empty");
    if (!ids_.emplace(tokens_[id], id).second)
      throw ToolError("token " + std::to_string(id) + " \"" + bytes_to_display(tokens_[id]) +
                      "\" appears twice in the vocabulary");
  }
  for (int b = 0; b < 256; ++b) {
    auto it = ids_.find(std::string_view(reinterpret_cast<const char*>(&b), 1));
    byte_tokens_[b] = it == ids_.end() ? kNoToken : it->second;
  }
  merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    auto [l, r] = merges[rank];
    if (l >= tokens_.size() || r >= tokens_.size())
      throw ToolError("merge " + std::to_string(rank) + " refers to a token id outside the vocabulary");
    joined = tokens_[l] + tokens_[r];
    auto it = ids_.find(joined);
    if (it == ids_.end())
      throw ToolError("merge " + std::to_string(rank) + " (\"" + bytes_to_display(tokens_[l]) + "\" \"" +
                      bytes_to_display(tokens_[r]) + "\") makes a token that is not in the vocabulary");
    // A repeated pair keeps its first (lowest) rank, as a rank lookup would.
    pairs_.insert(l, r, MergeValue{static_cast<uint32_t>(rank), it->second});
    merges_.push_back(Merge{l, r, it->second});
  }
  if (ids_.count(kEndOfText)) add_special_token(kEndOfText);
}

void BpeModel::add_special_token(std::string_view text) {
  auto id = find_token(text);
  if (!id) throw ToolError("special token \"" + std::string(text) + "\" is not in the vocabulary");
  for (auto& s : specials_)
    if (s.first == text) return;
  specials_.emplace_back(std::string(text), *id);
}

std::optional<TokenId> BpeModel::find_token(std::string_view bytes) const {
  auto it = ids_.find(bytes);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::decode_append(std::span<const TokenId> ids, std::string& out) const {
  for (TokenId id : ids) {
    if (id >= tokens_.size())
      throw ToolError("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                      std::to_string(tokens_.size()) + ")");
    out += tokens_[id];
  }
}

std::string BpeModel::decode(std::span<const TokenId> ids) const {
  std::string out;
  decode_append(ids, out);
  return out;
}

std::shared_ptr<const BpeModel> BpeModel::load(const std::string& vocab_json_path,
                                               const std::string& merges_txt_path) {
  std::vector<std::string> tokens = read_vocab_json(vocab_json_path);
  std::vector<std::pair<TokenId, TokenId>> merges = read_merges_txt(merges_txt_path, tokens, vocab_json_path);
  check_vocab_matches_merges(tokens, merges, vocab_json_path, merges_txt_path);
  return std::make_shared<const BpeModel>(std::move(tokens), merges);
}

}  // namespace suite::bpe
