// Encoder behaviour beyond the golden files: special tokens, pathological pieces, both merge
// paths, decode errors, per-thread copies.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/cli/error.h"
#include "common/tokenizer/encoder.h"
#include "common/tokenizer/pretokenizer.h"
#include "tests/unit/tokenizer/gpt2_fixture.h"

using namespace suite::bpe;
using namespace suite::bpe::test;
using Ids = std::vector<TokenId>;

TEST_CASE("<|endoftext|> is ordinary text by default and one id with allow_special") {
  Encoder plain(gpt2_model());
  Encoder special(gpt2_model(), EncodeOptions{.allow_special = true});
  CHECK(plain.encode("<|endoftext|>") == Ids{27, 91, 437, 1659, 5239, 91, 29});
  CHECK(special.encode("<|endoftext|>") == Ids{50256});
  CHECK(special.encode("hello <|endoftext|>") == Ids{31373, 220, 50256});
  CHECK(special.encode("<|endoftext|><|endoftext|>x") == Ids{50256, 50256, 87});
  CHECK(special.encode("a<|endoftext|") == plain.encode("a<|endoftext|"));
  Encoder copy = special;  // a per-thread clone keeps the options
  CHECK(copy.encode("<|endoftext|>") == Ids{50256});
}

TEST_CASE("known merge vectors (tiktoken test_encoding.py)") {
  Encoder enc(gpt2_model());
  CHECK(enc.encode("0") == Ids{15});
  CHECK(enc.encode("0000000") == Ids{24598});
  CHECK(enc.encode("000000000") == Ids{10535, 830});
  CHECK(enc.encode(std::string(16, '0')) == Ids{25645});
  CHECK(enc.encode(std::string(17, '0')) == Ids{8269, 10535, 830});
  CHECK(enc.encode(std::string(40, 'a')) == Ids(10, 24794));
}

TEST_CASE("the short and the heap merge paths agree") {
  const BpeModel& m = *gpt2_model();
  MergeScratch sc;
  std::mt19937 rng(7);
  const std::string alphabet = "aaabbcdeeeinorst  0123'.,\xC3\xA9\xE2\x80\x99";
  for (int n = 0; n < 3000; ++n) {
    std::string s;
    size_t len = 1 + rng() % 120;
    for (size_t k = 0; k < len; ++k) s.push_back(alphabet[rng() % alphabet.size()]);
    Ids a, b;
    apply_merges_short(m, s, a, sc);
    apply_merges_long(m, s, b, sc);
    CAPTURE(s);
    REQUIRE(a == b);
  }
}

TEST_CASE("pathological inputs finish and round-trip") {
  Encoder enc(gpt2_model());
  const BpeModel& m = *gpt2_model();
  auto roundtrip = [&](const std::string& s) {
    Ids ids = enc.encode(s);
    CHECK(m.decode(ids) == s);
    return ids;
  };
  Ids a = roundtrip(std::string(1 << 20, 'a'));
  CHECK(a.size() == (1u << 20) / 4);  // "aaaa" (24794) is the longest run token
  std::string nows;
  std::mt19937 rng(1);
  const std::string chars = "abcXYZ019_-+=/.,;:!?()[]{}";
  while (nows.size() < (1u << 20)) nows.push_back(chars[rng() % chars.size()]);
  roundtrip(nows);
  roundtrip(std::string(100000, ' '));
  roundtrip(" " + std::string(100000, '\n') + "x");
  for (const char* c : {"^", "0", "'s", " "}) {
    std::string s;
    for (int i = 0; i < 10000; ++i) s += c;
    roundtrip(s);
    roundtrip(" " + s + "\n");
  }
}

TEST_CASE("decode rejects ids outside the vocabulary; bytes round-trip exactly") {
  const BpeModel& m = *gpt2_model();
  CHECK_THROWS_AS(m.decode(Ids{50257}), suite::ToolError);
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  Encoder enc(gpt2_model());
  CHECK(m.decode(enc.encode(bytes)) == bytes);  // invalid UTF-8 still encodes byte-wise
  CHECK(m.byte_token(' ') == 220);
  CHECK(m.byte_token('!') == 0);
}

TEST_CASE("encoders copied into threads give the same ids") {
  auto docs = read_tricky_cases();
  Encoder proto(gpt2_model());
  std::vector<Ids> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t, enc = proto]() mutable {
      for (const auto& d : docs) enc.encode(d.text, results[t]);
    });
  for (auto& th : threads) th.join();
  Ids expected;
  for (const auto& d : docs) expected.insert(expected.end(), d.ids.begin(), d.ids.end());
  for (const auto& r : results) CHECK(r == expected);
}
