// vocab.json / merges.txt reading and writing.
#include <doctest/doctest.h>

#include <string>

#include "common/cli/error.h"
#include "common/tokenizer/byte_map.h"
#include "common/tokenizer/vocab_io.h"
#include "tests/unit/tokenizer/gpt2_fixture.h"

using namespace suite::bpe;
using namespace suite::bpe::test;

namespace {
std::string error_of(auto&& f) {
  try {
    f();
  } catch (const suite::ToolError& e) {
    return e.where() + ": " + e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("GPT-2 files load and write back byte for byte") {
  const BpeModel& m = *gpt2_model();
  CHECK(m.vocab_size() == 50257);
  CHECK(m.merges().size() == 50000);
  CHECK(m.token_bytes(256) == " t");
  CHECK(m.merges()[0].merged == 256);
  CHECK(m.merges()[49999].merged == 50255);
  CHECK(format_vocab_json(m.tokens()) == read_file(kVocabPath));
  CHECK(format_merges_txt(m.tokens(), m.merges()) == read_file(kMergesPath));
}

TEST_CASE("byte map: GPT-2 stand-ins") {
  CHECK(byte_to_char(' ') == 0x120);
  CHECK(byte_to_char('\n') == 0x10A);
  CHECK(byte_to_char(0xAD) == 0x143);
  CHECK(char_to_byte(0x120) == ' ');
  CHECK(char_to_byte(' ') == -1);
  CHECK(bytes_to_token_text(" the\n") == "\u0120the\u010a");
  std::string b;
  CHECK(token_text_to_bytes("\u0120the", b));
  CHECK(b == " the");
  CHECK_FALSE(token_text_to_bytes("a b", b));
}

TEST_CASE("vocab.json: escapes, raw UTF-8, any whitespace layout") {
  auto t = parse_vocab_json("{\n  \"\\u0120a\": 1,\n  \"\u0120\": 0, \"\\\"\": 2}", "v");
  REQUIRE(t.size() == 3);
  CHECK(t[0] == " ");
  CHECK(t[1] == " a");
  CHECK(t[2] == "\"");
  // U+1F600 is not a byte stand-in: rejected (byte-level vocabularies only).
  CHECK(error_of([] { parse_vocab_json("{\"\\ud83d\\ude00\": 0}", "v"); }).starts_with("v:1:"));
}

TEST_CASE("vocab.json errors carry file and line") {
  CHECK(error_of([] { parse_vocab_json("{\"a\": 0,\n\"b\": 0}", "v.json"); }) == "v.json:2: id 0 also used on line 1");
  CHECK(error_of([] { parse_vocab_json("{\"a\": 1}", "v.json"); }) == "v.json: ids are not contiguous: id 0 is missing");
  CHECK(error_of([] { parse_vocab_json("{\"a\": 0\n\n", "v.json"); }) == "v.json:3: expected '}', found end of file");
  CHECK(error_of([] { parse_vocab_json("{\"a\": -1}", "v.json"); }) == "v.json:1: token id must be a non-negative integer");
  CHECK(error_of([] { parse_vocab_json("[]", "v.json"); }) == "v.json:1: expected '{', found '['");
  CHECK(error_of([] { parse_vocab_json("{\"a\": 0} x", "v.json"); }) == "v.json:1: unexpected text after the closing '}'");
  CHECK(error_of([] { parse_vocab_json("{\"\": 0}", "v.json"); }) == "v.json:1: empty token string");
  CHECK(error_of([] { read_vocab_json("/nonexistent/vocab.json"); }).starts_with("/nonexistent/vocab.json: cannot open"));
}

TEST_CASE("merges.txt with or without #version; errors carry file and line") {
  std::vector<std::string> tokens = {"a", "b", "ab", " ", " ab"};
  using P = std::vector<std::pair<TokenId, TokenId>>;
  CHECK(parse_merges_txt("#version: 0.2\na b\n\u0120 ab\n", "m", tokens) == P{{0, 1}, {3, 2}});
  CHECK(parse_merges_txt("a b\n\u0120 ab", "m", tokens) == P{{0, 1}, {3, 2}});  // no trailing newline kept
  CHECK(parse_merges_txt("a b\r\n", "m", tokens) == P{{0, 1}});
  CHECK(error_of([&] { parse_merges_txt("#version: 0.2\na  b\n", "m.txt", tokens); }) ==
        "m.txt:2: expected two tokens separated by one space");
  CHECK(error_of([&] { parse_merges_txt("a b\nb a\n", "m.txt", tokens); }) ==
        "m.txt:2: merged token \"ba\" is not in the vocabulary");
  CHECK(error_of([&] { parse_merges_txt("a c\n", "m.txt", tokens); }) == "m.txt:1: token \"c\" is not in the vocabulary");
  CHECK(error_of([&] { parse_merges_txt("a\n", "m.txt", tokens); }) == "m.txt:1: expected two tokens separated by one space");
  CHECK(error_of([&] { parse_merges_txt("a b\n\na b\n", "m.txt", tokens); }) == "m.txt:2: empty line");
}

TEST_CASE("a model built from parts checks its merges and formats like GPT-2") {
  std::vector<std::string> tokens = {"a", "b", "ab"};
  CHECK_THROWS_AS(BpeModel(tokens, {{1, 0}}), suite::ToolError);  // "ba" missing
  CHECK_THROWS_AS(BpeModel({"a", "a"}, {}), suite::ToolError);
  BpeModel m(tokens, {{0, 1}});
  CHECK(format_vocab_json(m.tokens()) == "{\"a\": 0, \"b\": 1, \"ab\": 2}");
  CHECK(format_merges_txt(m.tokens(), m.merges()) == "#version: 0.2\na b\n");
  CHECK(m.special_tokens().empty());
}

TEST_CASE("a vocabulary and merges from different training runs are refused, naming both files") {
  std::vector<std::string> tokens = {"a", "b", "ab", "abb", "<|endoftext|>"};
  using P = std::vector<std::pair<TokenId, TokenId>>;
  // A pair from one run: every multi-byte token but the special one comes from a merge.
  CHECK_NOTHROW(check_vocab_matches_merges(tokens, P{{0, 1}, {2, 1}}, "v.json", "m.txt"));
  // The merges of a smaller run: "abb" comes from no merge.
  CHECK(error_of([&] { check_vocab_matches_merges(tokens, P{{0, 1}}, "v.json", "m.txt"); }) ==
        "v.json: 1 token(s) of the vocabulary (e.g. \"abb\", id 3) come from no merge in m.txt: the vocabulary and "
        "the merges do not belong together");
  // The merges of a larger run: a merge's part is missing from the vocabulary, and the message names it.
  CHECK(error_of([&] { parse_merges_txt("a b\nab bb\n", "m.txt", tokens, "v.json"); }) ==
        "m.txt:2: token \"bb\" is not in the vocabulary v.json (the two files do not belong together)");
  // A special token of another shape that no two tokens make up passes too.
  std::vector<std::string> with_eos = {"a", "b", "ab", "EOS"};
  CHECK_NOTHROW(check_vocab_matches_merges(with_eos, P{{0, 1}}, "v.json", "m.txt"));
  // GPT-2's own pair passes.
  const BpeModel& m = *gpt2_model();
  std::vector<std::pair<TokenId, TokenId>> merges;
  for (const auto& merge : m.merges()) merges.emplace_back(merge.left, merge.right);
  CHECK_NOTHROW(check_vocab_matches_merges(m.tokens(), merges, kVocabPath, kMergesPath));
}
