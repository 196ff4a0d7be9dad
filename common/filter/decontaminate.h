// Benchmark decontamination after Megatron's tools/openwebtext/filter_ngrams.py: documents that
// share a word n-gram (default 13, lowercased words of letters and digits) with an evaluation text
// are split around each match (an evaluation text shorter than n words but of at least min_ngram
// words matches as a whole, as in Megatron) (the n-gram and 200 characters on each side are cut out; pieces
// shorter than 200 characters are dropped; a document split more than 10 times is dropped) or,
// in drop mode, dropped whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <map>
#include <unordered_set>
#include <vector>

namespace suite::filter {

struct DecontamConfig {
  size_t ngram = 13;
  size_t min_ngram = 8;      // shorter evaluation texts are ignored
  bool split = true;         // false: drop the whole document on a match
  size_t margin = 200;       // characters cut on each side of a match (bytes, snapped to UTF-8)
  size_t min_piece = 200;    // shorter pieces are dropped
  size_t max_splits = 10;    // more matches drop the document
};

class Decontaminator {
 public:
  explicit Decontaminator(DecontamConfig c = {}) : config_(c) {}
  // Adds the n-grams of one evaluation text.
  void add_eval_text(std::string_view text);
  // Reads evaluation texts: a JSONL file (the "text" field of each line) or plain text, one per line.
  void load(const std::string& path);
  size_t ngrams() const;
  const DecontamConfig& config() const { return config_; }

  // nullptr and no pieces: clean. nullptr and pieces: split into those pieces (views into `text`).
  // Otherwise the rule that drops the document ("decontam_match", "decontam_too_many_splits").
  // Thread-safe (const; scratch is per thread).
  const char* check(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Word {
    uint32_t begin, end;
    uint64_t hash;
  };
  void words_of(std::string_view text, std::vector<Word>& out) const;
  DecontamConfig config_;
  std::map<size_t, std::unordered_set<uint64_t>> sets_;  // by n-gram length
};

}  // namespace suite::filter
