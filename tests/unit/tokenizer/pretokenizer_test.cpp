// The hand-written scanner, one case per branch of the GPT-2 regex (spec §1.2-1.4).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/tokenizer/pretokenizer.h"

using suite::bpe::split_pieces;

namespace {
std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  for (auto p : split_pieces(s)) out.emplace_back(p);
  return out;
}
using V = std::vector<std::string>;
}  // namespace

TEST_CASE("contractions: lowercase, ASCII apostrophe, only at a piece start") {
  CHECK(split("don't") == V{"don", "'t"});
  CHECK(split("x's") == V{"x", "'s"});
  CHECK(split("I'm we'll they've you're he'd") ==
        V{"I", "'m", " we", "'ll", " they", "'ve", " you", "'re", " he", "'d"});
  CHECK(split("can't've") == V{"can", "'t", "'ve"});
  CHECK(split("'sand") == V{"'s", "and"});
  CHECK(split("DON'T") == V{"DON", "'", "T"});
  CHECK(split("!'s") == V{"!'", "s"});  // the punctuation run swallowed the apostrophe
  CHECK(split(" 's") == V{" '", "s"});
  CHECK(split("''s") == V{"''", "s"});
  CHECK(split("'l") == V{"'", "l"});
  CHECK(split("'") == V{"'"});
  CHECK(split("don\u2019t") == V{"don", "\u2019", "t"});
}

TEST_CASE("letters, numbers and other runs with an optional single space") {
  CHECK(split("hello world") == V{"hello", " world"});
  CHECK(split("abc123def") == V{"abc", "123", "def"});
  CHECK(split(" 2024") == V{" 2024"});
  CHECK(split("1,234.56") == V{"1", ",", "234", ".", "56"});
  CHECK(split("x != y") == V{"x", " !=", " y"});
  CHECK(split("...\"") == V{"...\""});
  CHECK(split("x\u00b2 \u00bd") == V{"x", "\u00b2", " \u00bd"});  // No is a number
  CHECK(split("cafe\u0301") == V{"cafe", "\u0301"});             // a mark is "other"
  CHECK(split("\u4f60\u597d\u4e16\u754c") == V{"\u4f60\u597d\u4e16\u754c"});
  CHECK(split("hello\U0001F44Bworld") == V{"hello", "\U0001F44B", "world"});
  CHECK(split("\ta") == V{"\t", "a"});                 // only U+0020 prefixes
  CHECK(split("a\u00a0b") == V{"a", "\u00a0", "b"});  // NBSP is whitespace, not a prefix
  CHECK(split("a \x1c" "b") == V{"a", " \x1c", "b"});  // U+001C is not \s
  CHECK(split("a \ufeffb") == V{"a", " \ufeff", "b"});
}

TEST_CASE("whitespace runs: \\s+(?!\\S) gives back one code point, \\s+ takes the rest") {
  CHECK(split("a  b") == V{"a", " ", " b"});
  CHECK(split("a   b") == V{"a", "  ", " b"});
  CHECK(split("a\n\nb") == V{"a", "\n", "\n", "b"});
  CHECK(split("a\n\n\nb") == V{"a", "\n\n", "\n", "b"});
  CHECK(split("a \nb") == V{"a", " ", "\n", "b"});
  CHECK(split("a\n b") == V{"a", "\n", " b"});
  CHECK(split("a\r\nb") == V{"a", "\r", "\n", "b"});
  CHECK(split("hello  ") == V{"hello", "  "});  // a run at the end stays whole
  CHECK(split("   ") == V{"   "});
  CHECK(split(" ") == V{" "});
  CHECK(split("\n") == V{"\n"});
  CHECK(split("x \u00a0\u00a0y") == V{"x", " \u00a0", "\u00a0", "y"});
  CHECK(split("a \u3000b") == V{"a", " ", "\u3000", "b"});  // backs up one code point, not one byte
  CHECK(split("a\u3000\u3000b") == V{"a", "\u3000", "\u3000", "b"});
  CHECK(split("    def f(x):\n        return x\n") ==
        V{"   ", " def", " f", "(", "x", "):", "\n       ", " return", " x", "\n"});
}

TEST_CASE("pieces partition any input, invalid UTF-8 included") {
  std::string junk = "a\xff\xfe b\xc3 \xe2\x82 \xf0\x9f\x91";
  std::string joined;
  for (auto& p : split(junk)) {
    CHECK(!p.empty());
    joined += p;
  }
  CHECK(joined == junk);
  CHECK(split("") == V{});
}
