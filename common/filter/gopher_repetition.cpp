// Gopher repetition with hashed n-grams: each word is hashed once (XXH3), n-grams combine the
// word hashes, and an open-addressing table counts them, so a document costs no allocation
// beyond buffers reused across documents.
#include <xxhash.h>

#include "common/filter/quality_rules.h"

namespace suite::filter {
namespace {

uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

// Open-addressing set/counter keyed by nonzero 64-bit hashes.
struct Table {
  std::vector<uint64_t>& keys;
  std::vector<uint32_t>& counts;
  size_t mask = 0;
  Table(std::vector<uint64_t>& k, std::vector<uint32_t>& c, size_t n) : keys(k), counts(c) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    keys.assign(cap, 0);
    counts.assign(cap, 0);
    mask = cap - 1;
  }
  // Increments the key's count and returns the new count.
  uint32_t add(uint64_t key) {
    key |= 1;
    for (size_t i = key & mask;; i = (i + 1) & mask) {
      if (keys[i] == key) return ++counts[i];
      if (keys[i] == 0) {
        keys[i] = key;
        return counts[i] = 1;
      }
    }
  }
};

// datatrove's find_duplicates: (number of repeated elements, characters in the repeats).
std::pair<size_t, size_t> find_duplicates(const std::vector<std::string_view>& elements, std::vector<uint64_t>& keys,
                                          std::vector<uint32_t>& counts) {
  Table t(keys, counts, elements.size());
  size_t dups = 0, chars = 0;
  for (std::string_view e : elements)
    if (t.add(XXH3_64bits(e.data(), e.size())) > 1) {
      ++dups;
      chars += count_code_points(e);
    }
  return {dups, chars};
}

// Splits on runs of '\n' (paragraphs: runs of two or more), after stripping the text.
std::vector<std::string_view> split_runs(std::string_view text, size_t min_run) {
  std::vector<std::string_view> out;
  text = strip(text);
  size_t start = 0, i = 0;
  while (i < text.size()) {
    if (text[i] != '\n') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && text[j] == '\n') ++j;
    if (j - i >= min_run) {
      out.push_back(text.substr(start, i - start));
      start = j;
    }
    i = j;
  }
  if (start < text.size() || out.empty()) out.push_back(text.substr(start));
  return out;
}

}  // namespace

const char* GopherRepetition::check(DocText& doc, const GopherRepetitionConfig& c) {
  std::string_view text = doc.text();
  const double len = doc.chars() ? double(doc.chars()) : 1.0;
  if (c.dup_para_frac >= 0 || c.dup_para_char_frac >= 0) {
    auto paras = split_runs(text, 2);
    auto [n, chars] = find_duplicates(paras, keys_, counts_);
    if (c.dup_para_frac >= 0 && double(n) / double(paras.size()) > c.dup_para_frac) return "gopher_dup_para_frac";
    if (c.dup_para_char_frac >= 0 && double(chars) / len > c.dup_para_char_frac) return "gopher_dup_para_char_frac";
  }
  if (c.dup_line_frac >= 0 || c.dup_line_char_frac >= 0) {
    auto lines = split_runs(text, 1);
    auto [n, chars] = find_duplicates(lines, keys_, counts_);
    if (c.dup_line_frac >= 0 && double(n) / double(lines.size()) > c.dup_line_frac) return "gopher_dup_line_frac";
    if (c.dup_line_char_frac >= 0 && double(chars) / len > c.dup_line_char_frac) return "gopher_dup_line_char_frac";
  }
  const auto& words = doc.words();
  const size_t nw = words.size();
  hashes_.resize(nw);
  lengths_.resize(nw);
  for (size_t i = 0; i < nw; ++i) {
    hashes_[i] = XXH3_64bits(words[i].data(), words[i].size());
    lengths_[i] = uint32_t(count_code_points(words[i]));
  }
  static const char* kTop[] = {"gopher_top_2gram", "gopher_top_3gram", "gopher_top_4gram"};
  for (size_t k = 0; k < c.top_ngram_frac.size() && k < 3; ++k) {
    const size_t n = k + 2;
    if (c.top_ngram_frac[k] < 0 || nw < n) continue;
    Table t(keys_, counts_, nw);
    uint32_t best = 0;
    size_t best_chars = 0;
    for (size_t i = 0; i + n <= nw; ++i) {
      uint64_t h = 0;
      size_t chars = n - 1;  // the joining spaces
      for (size_t j = 0; j < n; ++j) {
        h = mix(h, hashes_[i + j]);
        chars += lengths_[i + j];
      }
      uint32_t cnt = t.add(h);
      if (cnt > best) {  // the highest count (on ties, the first n-gram to reach it)
        best = cnt;
        best_chars = chars;
      }
    }
    if (double(best_chars) * best / len > c.top_ngram_frac[k]) return kTop[k];
  }
  static const char* kDup[] = {"gopher_dup_5gram",  "gopher_dup_6gram",  "gopher_dup_7gram",
                               "gopher_dup_8gram",  "gopher_dup_9gram",  "gopher_dup_10gram"};
  for (size_t k = 0; k < c.dup_ngram_frac.size() && k < 6; ++k) {
    const size_t n = k + 5;
    if (c.dup_ngram_frac[k] < 0 || nw < n) continue;
    Table t(keys_, counts_, nw);
    size_t repeated = 0;
    for (size_t i = 0; i + n <= nw;) {
      uint64_t h = 0;
      size_t chars = 0;
      for (size_t j = 0; j < n; ++j) {
        h = mix(h, hashes_[i + j]);
        chars += lengths_[i + j];
      }
      if (t.add(h) > 1) {
        repeated += chars;
        i += n;
      } else {
        ++i;
      }
    }
    if (double(repeated) / len > c.dup_ngram_frac[k]) return kDup[k];
  }
  return nullptr;
}

}  // namespace suite::filter
