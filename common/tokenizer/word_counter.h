// Counting pre-tokenized words (pieces) for BPE training. Memory is proportional to the
// number of distinct words. Count on N threads with one WordCounter each, then merge_from()
// them into one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace suite::bpe {

struct WordHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const;
};
struct WordEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};
using WordCountMap = std::unordered_map<std::string, uint64_t, WordHash, WordEq>;

class WordCounter {
 public:
  // cut_out: strings removed from the text before pre-tokenization (each occurrence acts as a
  // boundary), e.g. {"<|endoftext|>"} so that the special token never feeds the merges.
  explicit WordCounter(std::vector<std::string> cut_out = {}) : cut_out_(std::move(cut_out)) {}

  // Pre-tokenizes text as one sequence (as bpe-encode sees a document) and counts the pieces.
  void add_text(std::string_view text);
  // HF `train(files)` feeding: every line, with its "\n" (or "\r\n"), is its own sequence, so
  // no piece spans a line break (spec §2.1 step 1). Use this to reproduce HF merges exactly.
  void add_lines(std::string_view text);
  // Counts one already pre-tokenized word (raw bytes).
  void add_word(std::string_view word, uint64_t count = 1);

  void merge_from(const WordCounter& other);
  void merge_from(WordCounter&& other);

  const WordCountMap& counts() const { return counts_; }
  size_t distinct_words() const { return counts_.size(); }
  uint64_t total_words() const { return total_; }

 private:
  void add_uncut(std::string_view text);

  std::vector<std::string> cut_out_;
  WordCountMap counts_;
  uint64_t total_ = 0;
};

}  // namespace suite::bpe
