#include "common/tokenizer/trainer.h"

#include <algorithm>
#include <unordered_map>

#include "common/cli/error.h"
#include "common/tokenizer/byte_map.h"

namespace suite::bpe {

namespace {

uint64_t pack(TokenId a, TokenId b) { return (uint64_t{a} << 32) | b; }

// Heap entry: a candidate pair with the count it had when pushed and the words it was
// pushed for (HF's Merge {pair, count, pos}).
struct Candidate {
  uint64_t count;
  uint64_t pair;
  uint32_t words;  // index into Trainer::word_lists_
};
// std heap is a max-heap on "less": higher count first, then the smaller pair.
struct CandidateLess {
  bool operator()(const Candidate& x, const Candidate& y) const {
    if (x.count != y.count) return x.count < y.count;
    return x.pair > y.pair;
  }
};

struct PairDelta {
  uint64_t pair;
  int64_t delta;
  uint32_t word;
};

class Trainer {
 public:
  Trainer(const WordCounter& counter, const TrainerOptions& opt) : opt_(opt) {
    for (const auto& s : opt.special_tokens)
      if (!s.empty() && std::find(specials_.begin(), specials_.end(), s) == specials_.end()) specials_.push_back(s);
    if (opt.specials_first)
      for (const auto& s : specials_) add_token(s);
    build_alphabet(counter);
    build_words(counter);
  }

  TrainResult run() {
    count_pairs();
    const size_t target = opt_.specials_first ? opt_.vocab_size
                          : opt_.vocab_size > specials_.size() ? opt_.vocab_size - specials_.size()
                                                               : 0;
    TrainProgress progress{0, target > tokens_.size() ? target - tokens_.size() : 0, 0};
    while (tokens_.size() < target && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), CandidateLess());
      Candidate top = heap_.back();
      heap_.pop_back();
      int64_t now = pair_counts_[top.pair];
      uint64_t current = now > 0 ? static_cast<uint64_t>(now) : 0;
      if (top.count != current) {  // stale: re-queue with the current count
        top.count = current;
        heap_.push_back(top);
        std::push_heap(heap_.begin(), heap_.end(), CandidateLess());
        continue;
      }
      if (top.count < 1 || opt_.min_frequency > top.count) break;
      apply(top);
      progress.merges_done = merges_.size();
      progress.last_count = top.count;
      if (opt_.progress && opt_.progress_every && merges_.size() % opt_.progress_every == 0) opt_.progress(progress);
    }
    if (opt_.progress) opt_.progress(progress);

    TrainResult r;
    if (!opt_.specials_first)
      for (const auto& s : specials_)
        if (!ids_.count(s)) add_token(s);
    r.tokens = std::move(tokens_);
    r.merges = std::move(merges_);
    r.special_tokens = specials_;
    return r;
  }

 private:
  TokenId add_token(const std::string& bytes) {
    auto [it, fresh] = ids_.emplace(bytes, static_cast<TokenId>(tokens_.size()));
    if (fresh) tokens_.push_back(bytes);
    return it->second;
  }

  void build_alphabet(const WordCounter& counter) {
    bool seen[256] = {};
    if (opt_.full_byte_alphabet) {
      std::fill(std::begin(seen), std::end(seen), true);
    } else {
      for (const auto& [word, count] : counter.counts())
        for (unsigned char b : word) seen[b] = true;
    }
    for (int i = 0; i < 256; ++i) {  // sorted by stand-in code point, like HF
      uint8_t b = byte_in_char_order(i);
      if (seen[b]) byte_id_[b] = add_token(std::string(1, static_cast<char>(b)));
    }
  }

  void build_words(const WordCounter& counter) {
    size_t total = 0;
    for (const auto& [word, count] : counter.counts()) total += word.size();
    symbols_.reserve(total);
    for (const auto& [word, count] : counter.counts()) {
      offset_.push_back(symbols_.size());
      for (unsigned char b : word) symbols_.push_back(byte_id_[b]);
      length_.push_back(static_cast<uint32_t>(word.size()));
      count_.push_back(count);
    }
  }

  uint32_t new_word_list() {
    if (!free_lists_.empty()) {
      uint32_t k = free_lists_.back();
      free_lists_.pop_back();
      return k;
    }
    word_lists_.emplace_back();
    return static_cast<uint32_t>(word_lists_.size() - 1);
  }

  void count_pairs() {
    std::unordered_map<uint64_t, uint32_t> lists;  // pair -> its word list
    for (uint32_t w = 0; w < count_.size(); ++w) {
      const TokenId* s = &symbols_[offset_[w]];
      for (uint32_t i = 0; i + 1 < length_[w]; ++i) {
        uint64_t p = pack(s[i], s[i + 1]);
        pair_counts_[p] += static_cast<int64_t>(count_[w]);
        auto [it, fresh] = lists.emplace(p, 0);
        if (fresh) it->second = new_word_list();
        auto& list = word_lists_[it->second];
        if (list.empty() || list.back() != w) list.push_back(w);
      }
    }
    heap_.reserve(lists.size());
    for (auto [p, list] : lists) {
      int64_t c = pair_counts_[p];
      if (c > 0) heap_.push_back(Candidate{static_cast<uint64_t>(c), p, list});
      else release(list);
    }
    std::make_heap(heap_.begin(), heap_.end(), CandidateLess());
  }

  void release(uint32_t list) {
    std::vector<uint32_t>().swap(word_lists_[list]);
    free_lists_.push_back(list);
  }

  // Merges the pair in every word of its list, HF Word::merge style, collecting deltas.
  void apply(const Candidate& top) {
    const TokenId a = static_cast<TokenId>(top.pair >> 32), b = static_cast<TokenId>(top.pair);
    const TokenId merged = add_token(tokens_[a] + tokens_[b]);
    merges_.emplace_back(a, b);
    deltas_.clear();
    for (uint32_t w : word_lists_[top.words]) {
      TokenId* s = &symbols_[offset_[w]];
      const uint32_t len = length_[w];
      const int64_t c = static_cast<int64_t>(count_[w]);
      uint32_t r = 0, out = 0;
      while (r < len) {
        if (r + 1 < len && s[r] == a && s[r + 1] == b) {
          if (out > 0) {
            deltas_.push_back({pack(s[out - 1], a), -c, w});
            deltas_.push_back({pack(s[out - 1], merged), c, w});
          }
          if (r + 2 < len) {
            deltas_.push_back({pack(b, s[r + 2]), -c, w});
            deltas_.push_back({pack(merged, s[r + 2]), c, w});
          }
          s[out++] = merged;
          r += 2;
        } else {
          s[out++] = s[r++];
        }
      }
      length_[w] = out;
    }
    release(top.words);

    // Apply deltas; pairs that gained get a fresh heap entry for the words that gained them.
    std::unordered_map<uint64_t, uint32_t> gained;
    for (const PairDelta& d : deltas_) {
      pair_counts_[d.pair] += d.delta;
      if (d.delta > 0) {
        auto [it, fresh] = gained.emplace(d.pair, 0);
        if (fresh) it->second = new_word_list();
        auto& list = word_lists_[it->second];
        if (list.empty() || list.back() != d.word) list.push_back(d.word);
      }
    }
    // Deterministic push order (the heap result does not depend on it, but keep it stable).
    std::vector<std::pair<uint64_t, uint32_t>> order(gained.begin(), gained.end());
    std::sort(order.begin(), order.end());
    for (auto [p, list] : order) {
      int64_t c = pair_counts_[p];
      if (c > 0) {
        heap_.push_back(Candidate{static_cast<uint64_t>(c), p, list});
        std::push_heap(heap_.begin(), heap_.end(), CandidateLess());
      } else {
        release(list);
      }
    }
  }

  const TrainerOptions& opt_;
  std::vector<std::string> specials_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, TokenId> ids_;
  TokenId byte_id_[256] = {};
  std::vector<std::pair<TokenId, TokenId>> merges_;

  // Words: symbols of word w live at symbols_[offset_[w] .. + length_[w]) and only shrink.
  std::vector<TokenId> symbols_;
  std::vector<size_t> offset_;
  std::vector<uint32_t> length_;
  std::vector<uint64_t> count_;

  std::unordered_map<uint64_t, int64_t> pair_counts_;
  std::vector<std::vector<uint32_t>> word_lists_;
  std::vector<uint32_t> free_lists_;
  std::vector<Candidate> heap_;
  std::vector<PairDelta> deltas_;
};

}  // namespace

TrainResult train_bpe(const WordCounter& words, const TrainerOptions& options) {
  return Trainer(words, options).run();
}

std::shared_ptr<const BpeModel> TrainResult::model() const {
  auto m = std::make_shared<BpeModel>(tokens, merges);
  for (const auto& s : special_tokens) m->add_special_token(s);
  return m;
}

}  // namespace suite::bpe
