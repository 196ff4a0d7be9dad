// Exact GPT-2 ids on the golden files: 110 tricky strings (tiktoken-rs = HF) and the whole
// fortunes corpus as tokenized by Megatron's preprocess_data.py with --append-eod.
#include <doctest/doctest.h>

#include <cstring>

#include "common/tokenizer/encoder.h"
#include "tests/unit/tokenizer/gpt2_fixture.h"

using namespace suite::bpe;
using namespace suite::bpe::test;

TEST_CASE("every tricky string encodes to its GPT-2 ids and decodes back") {
  Encoder enc(gpt2_model());
  auto cases = read_tricky_cases();
  REQUIRE(cases.size() == 110);
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(enc.encode(c.text) == c.ids);
    CHECK(gpt2_model()->decode(c.ids) == c.text);
  }
}

TEST_CASE("tricky strings: a fresh encoder (cold cache) and a warm one agree") {
  Encoder warm(gpt2_model());
  auto cases = read_tricky_cases();
  for (const auto& c : cases) warm.encode(c.text);
  for (const auto& c : cases) {
    Encoder cold(gpt2_model());
    CHECK(cold.encode(c.text) == warm.encode(c.text));
  }
}

TEST_CASE("the fortunes corpus encodes to exactly Megatron's token stream") {
  auto docs = read_fortunes();
  REQUIRE(docs.size() == 14805);
  std::string bin = read_file("tests/data/golden/megatron/fortunes-en_text_document.bin");
  REQUIRE(bin.size() % 2 == 0);
  std::vector<uint16_t> expected(bin.size() / 2);
  std::memcpy(expected.data(), bin.data(), bin.size());  // little-endian host

  Encoder enc(gpt2_model());
  const TokenId eod = *gpt2_model()->eot_token();
  CHECK(eod == 50256);
  std::vector<TokenId> ids;
  size_t pos = 0, mismatched_docs = 0;
  for (size_t d = 0; d < docs.size(); ++d) {
    ids.clear();
    enc.encode(docs[d], ids);
    ids.push_back(eod);
    bool same = pos + ids.size() <= expected.size();
    for (size_t k = 0; same && k < ids.size(); ++k) same = expected[pos + k] == ids[k];
    if (!same) {
      if (++mismatched_docs <= 3) FAIL_CHECK("document " << d << " differs: " << docs[d]);
      break;  // positions after a mismatch are meaningless
    }
    CHECK(gpt2_model()->decode(std::span(ids).first(ids.size() - 1)) == docs[d]);
    pos += ids.size();
  }
  CHECK(mismatched_docs == 0);
  CHECK(pos == expected.size());
}
