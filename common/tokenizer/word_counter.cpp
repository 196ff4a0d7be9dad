#include "common/tokenizer/word_counter.h"

#include <xxhash.h>

#include "common/tokenizer/pretokenizer.h"

namespace suite::bpe {

size_t WordHash::operator()(std::string_view s) const { return XXH3_64bits(s.data(), s.size()); }

void WordCounter::add_word(std::string_view word, uint64_t count) {
  if (word.empty() || count == 0) return;
  auto it = counts_.find(word);
  if (it == counts_.end()) counts_.emplace(std::string(word), count);
  else it->second += count;
  total_ += count;
}

void WordCounter::add_uncut(std::string_view text) {
  for_each_piece(text, [&](std::string_view piece) { add_word(piece); });
}

void WordCounter::add_text(std::string_view text) {
  size_t pos = 0;
  while (!cut_out_.empty()) {
    size_t best = std::string_view::npos, len = 0;
    for (const auto& c : cut_out_) {
      if (c.empty()) continue;
      size_t at = text.find(c, pos);
      if (at < best || (at == best && at != std::string_view::npos && c.size() > len)) {
        best = at;
        len = c.size();
      }
    }
    if (best == std::string_view::npos) break;
    add_uncut(text.substr(pos, best - pos));
    pos = best + len;
  }
  add_uncut(text.substr(pos));
}

void WordCounter::add_lines(std::string_view text) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    add_text(text.substr(0, end));
    text.remove_prefix(end);
  }
}

void WordCounter::merge_from(const WordCounter& other) {
  for (const auto& [word, count] : other.counts_) add_word(word, count);
}

void WordCounter::merge_from(WordCounter&& other) {
  if (counts_.empty()) {
    counts_ = std::move(other.counts_);
    total_ = other.total_;
  } else {
    if (other.counts_.size() > counts_.size()) {
      std::swap(counts_, other.counts_);
      std::swap(total_, other.total_);
    }
    for (auto& [word, count] : other.counts_) add_word(word, count);
  }
  other.counts_.clear();
  other.total_ = 0;
}

}  // namespace suite::bpe
