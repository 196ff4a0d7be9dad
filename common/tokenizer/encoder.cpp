#include "common/tokenizer/encoder.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/cli/error.h"
#include "common/tokenizer/pretokenizer.h"

namespace suite::bpe {

Encoder::Encoder(std::shared_ptr<const BpeModel> model, EncodeOptions options)
    : model_(std::move(model)), options_(options) {
  if (!model_) throw ToolError("Encoder needs a model");
}

Encoder& Encoder::operator=(const Encoder& other) {
  if (this != &other) {
    model_ = other.model_;
    options_ = other.options_;
    cache_ = PieceCache();
  }
  return *this;
}

void Encoder::encode_piece(std::string_view piece, std::vector<TokenId>& out) {
  if (piece.size() == 1) {
    TokenId t = model_->byte_token(static_cast<unsigned char>(piece[0]));
    if (t != kNoToken) {
      out.push_back(t);
      return;
    }
  }
  if (!PieceCache::cacheable(piece)) {
    apply_merges(*model_, piece, out, scratch_);
    return;
  }
  uint64_t h = XXH3_64bits(piece.data(), piece.size());
  if (cache_.lookup(piece, h, out)) return;
  size_t before = out.size();
  apply_merges_short(*model_, piece, out, scratch_);
  cache_.store(piece, h, out.data() + before, out.size() - before);
}

void Encoder::encode_ordinary(std::string_view text, std::vector<TokenId>& out) {
  for_each_piece(text, [&](std::string_view piece) { encode_piece(piece, out); });
}

void Encoder::encode(std::string_view text, std::vector<TokenId>& out) {
  const auto& specials = model_->special_tokens();
  if (!options_.allow_special || specials.empty()) {
    encode_ordinary(text, out);
    return;
  }
  // Next occurrence of each special token at or after pos (npos = none left).
  std::vector<size_t> next(specials.size());
  for (size_t k = 0; k < specials.size(); ++k) next[k] = text.find(specials[k].first);
  size_t pos = 0;
  for (;;) {
    size_t best = std::string_view::npos, which = 0;
    for (size_t k = 0; k < specials.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < pos) next[k] = text.find(specials[k].first, pos);
      // Earliest start wins; on a tie the longer token.
      if (next[k] < best || (next[k] == best && next[k] != std::string_view::npos &&
                             specials[k].first.size() > specials[which].first.size())) {
        best = next[k];
        which = k;
      }
    }
    if (best == std::string_view::npos) break;
    encode_ordinary(text.substr(pos, best - pos), out);
    out.push_back(specials[which].second);
    pos = best + specials[which].first.size();
  }
  encode_ordinary(text.substr(pos), out);
}

std::vector<TokenId> Encoder::encode(std::string_view text) {
  std::vector<TokenId> out;
  encode(text, out);
  return out;
}

}  // namespace suite::bpe
