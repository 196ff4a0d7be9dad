// BPE trainer: HF BpeTrainer's worked examples (spec §2.1) and hand-checked corpora.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/tokenizer/byte_map.h"
#include "common/tokenizer/encoder.h"
#include "common/tokenizer/trainer.h"

using namespace suite::bpe;

namespace {
// Merges as "left right" in stand-in text, like merges.txt lines.
std::vector<std::string> merge_lines(const TrainResult& r) {
  std::vector<std::string> out;
  for (auto [l, rt] : r.merges) out.push_back(bytes_to_token_text(r.tokens[l]) + " " + bytes_to_token_text(r.tokens[rt]));
  return out;
}
TrainerOptions bare() {  // HF BpeTrainer::default(): no specials, seen-bytes alphabet
  TrainerOptions o;
  o.vocab_size = 30000;
  o.special_tokens = {};
  o.full_byte_alphabet = false;
  return o;
}
}  // namespace

TEST_CASE("HF example: aaabdaaabac, tie (aa,a)=(a,b)=2 goes to the smaller ids (a,b)") {
  WordCounter wc;
  wc.add_lines("aaabdaaabac");
  auto r = train_bpe(wc, bare());
  CHECK(merge_lines(r) == std::vector<std::string>{"a a", "a b", "aa ab", "a c", "d aaab", "aaab daaab", "aaabdaaab ac"});
  CHECK(r.tokens.size() == 4 + 7);  // alphabet a b c d, then one token per merge
  CHECK(r.tokens[0] == "a");
  CHECK(r.tokens.back() == "aaabdaaabac");
}

TEST_CASE("HF example: low lower lowest newer wider new, 4-way tie at the first step") {
  WordCounter wc;
  wc.add_lines("low lower lowest newer wider new\n");
  auto r = train_bpe(wc, bare());
  auto lines = merge_lines(r);
  REQUIRE(lines.size() >= 12);
  lines.resize(12);
  CHECK(lines == std::vector<std::string>{"e r", "l o", "lo w", "e w", "n ew", "Ġ low", "Ġ new", "d er", "e s",
                                          "i der", "w ider", "Ġ wider"});
}

TEST_CASE("the full byte alphabet changes ids but not the merge sequence") {
  WordCounter wc;
  wc.add_lines("low lower lowest newer wider new\n");
  TrainerOptions full = bare();
  full.full_byte_alphabet = true;
  auto a = train_bpe(wc, bare()), b = train_bpe(wc, full);
  CHECK(merge_lines(a) == merge_lines(b));
  CHECK(b.tokens.size() == 256 + b.merges.size());
  for (int i = 0; i < 256; ++i) CHECK(b.tokens[i] == std::string(1, char(byte_in_char_order(i))));
}

TEST_CASE("overlapping runs merge left to right without overlap: aaaa -> aa aa -> aaaa") {
  WordCounter wc;
  wc.add_word("aaaa");
  auto r = train_bpe(wc, bare());
  CHECK(merge_lines(r) == std::vector<std::string>{"a a", "aa aa"});
  WordCounter wc3;
  wc3.add_word("aaa", 5);  // (a,a) = 10, then (aa,a) = 5
  CHECK(merge_lines(train_bpe(wc3, bare())) == std::vector<std::string>{"a a", "aa a"});
}

TEST_CASE("count ties: equal counts go to the smaller (left id, right id)") {
  WordCounter wc;
  wc.add_word("zy", 3);
  wc.add_word("xw", 3);
  wc.add_word("xv", 3);
  // All three pairs count 3; ids follow code points: v < w < x < y < z.
  CHECK(merge_lines(train_bpe(wc, bare())) == std::vector<std::string>{"x v", "x w", "z y"});
  WordCounter wc2;
  wc2.add_word("ba", 2);
  wc2.add_word("ab", 2);
  CHECK(merge_lines(train_bpe(wc2, bare())) == std::vector<std::string>{"a b", "b a"});
}

TEST_CASE("higher count wins before ids; word counts weight pairs") {
  WordCounter wc;
  wc.add_word("ab", 2);
  wc.add_word("yz", 3);
  CHECK(merge_lines(train_bpe(wc, bare())) == std::vector<std::string>{"y z", "a b"});
}

TEST_CASE("min_frequency is inclusive and vocab_size stops training") {
  WordCounter wc;
  wc.add_word("ab", 2);
  wc.add_word("cd", 1);
  TrainerOptions o = bare();
  o.min_frequency = 2;
  CHECK(merge_lines(train_bpe(wc, o)) == std::vector<std::string>{"a b"});
  o.min_frequency = 3;
  CHECK(train_bpe(wc, o).merges.empty());
  o = bare();
  o.vocab_size = 5;  // alphabet a b c d + one merge
  auto r = train_bpe(wc, o);
  CHECK(merge_lines(r) == std::vector<std::string>{"a b"});
  CHECK(r.tokens.size() == 5);
}

TEST_CASE("special tokens: appended after the merges by default, or first like HF") {
  WordCounter wc({std::string(kEndOfText)});
  wc.add_text("ab ab<|endoftext|>ab");
  // The cut-out special never reaches the counts.
  CHECK(wc.counts().count("<|") == 0);
  CHECK(wc.counts().at("ab") == 2);
  CHECK(wc.counts().at(" ab") == 1);
  TrainerOptions o;
  o.vocab_size = 256 + 2 + 1;
  auto r = train_bpe(wc, o);
  CHECK(merge_lines(r) == std::vector<std::string>{"a b", "Ġ ab"});
  REQUIRE(r.tokens.size() == 259);
  CHECK(r.tokens.back() == "<|endoftext|>");
  auto model = r.model();
  CHECK(model->eot_token() == TokenId{258});
  Encoder enc(model, EncodeOptions{.allow_special = true});
  CHECK(enc.encode("ab ab<|endoftext|>") == std::vector<TokenId>{256, 257, 258});

  o.specials_first = true;
  auto f = train_bpe(wc, o);
  CHECK(f.tokens[0] == "<|endoftext|>");
  CHECK(f.tokens[1] == "!");
  CHECK(merge_lines(f) == std::vector<std::string>{"a b", "Ġ ab"});
}

TEST_CASE("a merged string that already exists reuses its id and still records the merge") {
  WordCounter wc;
  wc.add_word("ab", 4);
  wc.add_word("cd", 1);
  TrainerOptions o = bare();
  o.special_tokens = {"ab"};
  o.specials_first = true;  // "ab" is id 0 before any merge
  auto r = train_bpe(wc, o);
  CHECK(merge_lines(r) == std::vector<std::string>{"a b", "c d"});
  CHECK(r.tokens.size() == 1 + 4 + 1);  // "ab", a b c d, "cd": the first merge added nothing
  CHECK(r.tokens[0] == "ab");
}

TEST_CASE("word counting merges across threads' counters and HF line feeding") {
  WordCounter a, b;
  a.add_text("the cat the");
  b.add_text("the dog");
  a.merge_from(std::move(b));
  CHECK(a.counts().at("the") == 2);
  CHECK(a.counts().at(" the") == 1);
  CHECK(a.counts().at(" dog") == 1);
  CHECK(a.total_words() == 5);
  // Whole text vs per-line feeding differ around line breaks (spec §2.1 step 1).
  WordCounter whole, lines;
  whole.add_text("x \ny");
  lines.add_lines("x \ny");
  CHECK(whole.counts().count(" ") == 1);
  CHECK(lines.counts().count(" \n") == 1);
}

TEST_CASE("progress callback reports merges") {
  WordCounter wc;
  wc.add_lines("low lower lowest newer wider new\n");
  TrainerOptions o = bare();
  o.progress_every = 2;
  size_t calls = 0, last = 0;
  o.progress = [&](const TrainProgress& p) {
    ++calls;
    last = p.merges_done;
  };
  auto r = train_bpe(wc, o);
  CHECK(last == r.merges.size());
  CHECK(calls == r.merges.size() / 2 + 1);
}

TEST_CASE("a trained model round-trips text through encode and decode") {
  WordCounter wc;
  std::string text = "the quick brown fox jumps over the lazy dog; the end.\n";
  for (int i = 0; i < 20; ++i) wc.add_lines(text);
  TrainerOptions o;
  o.vocab_size = 300;
  auto model = train_bpe(wc, o).model();
  Encoder enc(model);
  auto ids = enc.encode(text);
  CHECK(ids.size() < text.size() / 2);
  CHECK(model->decode(ids) == text);
  std::string other = "unseen \xF0\x9F\x91\x8D bytes";
  CHECK(model->decode(enc.encode(other)) == other);
}
