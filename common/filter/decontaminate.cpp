#include "common/filter/decontaminate.h"

#include <xxhash.h>

#include <algorithm>
#include <fstream>

#include "common/cli/error.h"
#include "common/jsonl/json_line.h"

namespace suite::filter {
namespace {

constexpr uint64_t kBase = 0x100000001B3ull;

bool word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c >= 0x80;
}

// Polynomial rolling hash of n word hashes: sum h[i+j] * kBase^(n-1-j) (mod 2^64).
template <class F>
void for_each_ngram(const std::vector<uint64_t>& h, size_t n, F&& f) {
  if (h.size() < n) return;
  uint64_t top = 1;
  for (size_t j = 1; j < n; ++j) top *= kBase;
  uint64_t acc = 0;
  for (size_t j = 0; j < n; ++j) acc = acc * kBase + h[j];
  f(size_t(0), acc);
  for (size_t i = n; i < h.size(); ++i) {
    acc = (acc - h[i - n] * top) * kBase + h[i];
    f(i - n + 1, acc);
  }
}

}  // namespace

void Decontaminator::words_of(std::string_view text, std::vector<Word>& out) const {
  out.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  char buf[64];
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !word_byte(p[i])) ++i;
    size_t s = i;
    uint64_t h = 0;
    size_t k = 0;
    while (i < text.size() && word_byte(p[i])) {
      unsigned char c = p[i++];
      buf[k++] = char(c >= 'A' && c <= 'Z' ? c + 32 : c);
      if (k == sizeof buf) {
        h = XXH3_64bits_withSeed(buf, k, h);
        k = 0;
      }
    }
    if (i == s) break;
    if (k) h = XXH3_64bits_withSeed(buf, k, h);
    out.push_back({uint32_t(s), uint32_t(i), h});
  }
}

void Decontaminator::add_eval_text(std::string_view text) {
  std::vector<Word> words;
  words_of(text, words);
  std::vector<uint64_t> h;
  for (const Word& w : words) h.push_back(w.hash);
  size_t n = h.size() >= config_.ngram ? config_.ngram : h.size();
  if (n == 0 || n < config_.min_ngram) return;
  auto& set = sets_[n];
  for_each_ngram(h, n, [&](size_t, uint64_t v) { set.insert(v); });
}

size_t Decontaminator::ngrams() const {
  size_t total = 0;
  for (const auto& [n, set] : sets_) total += set.size();
  return total;
}

void Decontaminator::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ToolError(path, "cannot open the decontamination file");
  std::string line;
  JsonLine json;
  std::string padded;
  uint64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.front() == '{') {
      padded = line;
      padded.append(64, '\0');
      if (json.parse(std::string_view(padded.data(), line.size())) == JsonLineError::kNone) {
        try {
          if (auto t = json.string_field("text")) add_eval_text(*t);
          continue;
        } catch (const std::exception& e) {
          throw ToolError(location(path, n), e.what());
        }
      }
    }
    add_eval_text(line);
  }
}

const char* Decontaminator::check(std::string_view text, std::vector<std::string_view>& pieces) const {
  pieces.clear();
  if (sets_.empty()) return nullptr;
  thread_local std::vector<Word> words_;
  thread_local std::vector<uint64_t> h;
  thread_local std::vector<std::pair<size_t, size_t>> hits;  // [first word, last word] of each match
  words_of(text, words_);
  h.resize(words_.size());
  for (size_t i = 0; i < words_.size(); ++i) h[i] = words_[i].hash;
  hits.clear();
  for (const auto& [n, set] : sets_)
    for_each_ngram(h, n, [&, n = n, &set = set](size_t i, uint64_t v) {
      if (set.count(v)) hits.emplace_back(i, i + n - 1);
    });
  if (hits.empty()) return nullptr;
  std::sort(hits.begin(), hits.end());
  // Cut intervals [begin - margin, end + margin) around every match, merged; an n-gram that starts
  // inside an earlier match is the same match.
  std::vector<std::pair<size_t, size_t>> cuts;
  size_t matches = 0;
  size_t skip_until = 0;
  for (auto [first, last] : hits) {
    if (matches && first <= skip_until) {  // overlaps the previous match: extend it
      cuts.back().second = std::max(cuts.back().second, std::min(text.size(), words_[last].end + config_.margin));
      skip_until = std::max(skip_until, last);
      continue;
    }
    ++matches;
    size_t b = words_[first].begin, e = words_[last].end;
    b = b > config_.margin ? b - config_.margin : 0;
    e = std::min(text.size(), e + config_.margin);
    if (!cuts.empty() && b <= cuts.back().second)
      cuts.back().second = std::max(cuts.back().second, e);
    else
      cuts.emplace_back(b, e);
    skip_until = last;
  }
  if (matches == 0) return nullptr;
  if (!config_.split) return "decontam_match";
  if (matches > config_.max_splits) return "decontam_too_many_splits";
  // Snap cut boundaries to UTF-8 character starts.
  auto snap = [&](size_t pos) {
    while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
    return pos;
  };
  size_t start = 0;
  auto take = [&](size_t a, size_t b) {
    if (b > a && b - a >= config_.min_piece) pieces.push_back(text.substr(a, b - a));
  };
  for (auto [b, e] : cuts) {
    take(start, snap(b));
    start = snap(e);
  }
  take(start, text.size());
  return pieces.empty() ? "decontam_match" : nullptr;
}

}  // namespace suite::filter
