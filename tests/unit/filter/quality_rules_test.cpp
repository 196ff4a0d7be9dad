// common/filter quality rules: each check with a document just inside and just outside its
// threshold. Every other check of the rule set is off (-1), so a case shows one threshold.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/filter/quality_rules.h"

using namespace suite::filter;

namespace {

std::string verdict(const char* rule) { return rule ? rule : "kept"; }

std::string repeat_words(const std::vector<std::string>& cycle, size_t n, const char* sep = " ") {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += sep;
    s += cycle[i % cycle.size()];
  }
  return s;
}

// Distinct filler words ("fa", "fb", ... "zz") so that fillers never repeat.
std::string filler_word(size_t i) { return std::string(1, char('f' + i / 26 % 20)) + char('a' + i % 26); }

// Appends distinct filler words until `s` is exactly `len` characters (ASCII).
std::string pad_to(std::string s, size_t len) {
  for (size_t i = 0; s.size() + 3 <= len; ++i) s += " " + filler_word(i);
  if (s.size() < len) s += " " + std::string(len - s.size() - 1, 'q');
  REQUIRE(s.size() == len);
  return s;
}

GopherQualityConfig gopher_off() {
  return {-1, -1, -1, -1, -1, -1, -1, -1, -1};
}

GopherRepetitionConfig repetition_off() {
  return {-1, -1, -1, -1, {-1, -1, -1}, {-1, -1, -1, -1, -1, -1}};
}

const char* gq(const std::string& text, const GopherQualityConfig& c) {
  DocText d;
  d.reset(text);
  return gopher_quality(d, c);
}

const char* gr(const std::string& text, const GopherRepetitionConfig& c) {
  DocText d;
  d.reset(text);
  GopherRepetition r;
  return r.check(d, c);
}

}  // namespace

TEST_CASE("Gopher quality: published defaults") {
  GopherQualityConfig c;
  CHECK(c.min_words == 50);
  CHECK(c.max_words == 100000);
  CHECK(c.min_avg_word_length == 3);
  CHECK(c.max_avg_word_length == 10);
  CHECK(c.max_symbol_word_ratio == 0.1);
  CHECK(c.max_bullet_lines_ratio == 0.9);
  CHECK(c.max_ellipsis_lines_ratio == 0.3);
  CHECK(c.min_alpha_words_ratio == 0.8);
  CHECK(c.min_stop_words == 2);
}

TEST_CASE("Gopher quality: word count 50..100000 (max lowered to 60 here)") {
  auto c = gopher_off();
  c.min_words = 50;
  c.max_words = 60;
  CHECK(verdict(gq(repeat_words({"river"}, 50), c)) == "kept");
  CHECK(verdict(gq(repeat_words({"river"}, 49), c)) == "gopher_short_doc");
  CHECK(verdict(gq(repeat_words({"river"}, 60), c)) == "kept");
  CHECK(verdict(gq(repeat_words({"river"}, 61), c)) == "gopher_long_doc");
  // Punctuation-only tokens are not words.
  CHECK(verdict(gq(repeat_words({"river"}, 49) + " -- !", c)) == "gopher_short_doc");
}

TEST_CASE("Gopher quality: mean word length in [3, 10]") {
  auto c = gopher_off();
  c.min_avg_word_length = 3;
  c.max_avg_word_length = 10;
  CHECK(verdict(gq(repeat_words({"abc"}, 50), c)) == "kept");
  CHECK(verdict(gq(repeat_words({"abc"}, 49) + " ab", c)) == "gopher_below_avg_word_length");
  CHECK(verdict(gq(repeat_words({"abcdefghij"}, 50), c)) == "kept");
  CHECK(verdict(gq(repeat_words({"abcdefghij"}, 49) + " abcdefghijk", c)) == "gopher_above_avg_word_length");
  CHECK(verdict(gq(repeat_words({"\u00e9\u00e9"}, 50), c)) == "gopher_below_avg_word_length");  // characters, not bytes
}

TEST_CASE("Gopher quality: '#' and ellipsis per word at most 0.1") {
  auto c = gopher_off();
  c.max_symbol_word_ratio = 0.1;
  CHECK(verdict(gq(repeat_words({"a#"}, 10) + " " + repeat_words({"word"}, 90), c)) == "kept");
  CHECK(verdict(gq(repeat_words({"a#"}, 11) + " " + repeat_words({"word"}, 89), c)) == "gopher_hash_ratio");
  CHECK(verdict(gq(repeat_words({"so..."}, 10) + " " + repeat_words({"word"}, 90), c)) == "kept");
  CHECK(verdict(gq(repeat_words({"so\u2026"}, 11) + " " + repeat_words({"word"}, 89), c)) == "gopher_ellipsis_ratio");
}

TEST_CASE("Gopher quality: bullet lines at most 90%, ellipsis lines at most 30%") {
  auto c = gopher_off();
  c.max_bullet_lines_ratio = 0.9;
  c.max_ellipsis_lines_ratio = 0.3;
  CHECK(verdict(gq(repeat_words({"- item"}, 18, "\n") + "\nplain\nplain", c)) == "kept");
  CHECK(verdict(gq(repeat_words({"\u2022 item"}, 19, "\n") + "\nplain", c)) == "gopher_bullet_lines");
  CHECK(verdict(gq(repeat_words({"and then..."}, 3, "\n") + "\n" + repeat_words({"done."}, 7, "\n"), c)) == "kept");
  CHECK(verdict(gq(repeat_words({"and then\u2026"}, 4, "\n") + "\n" + repeat_words({"done."}, 6, "\n"), c)) ==
        "gopher_ellipsis_lines");
}

TEST_CASE("Gopher quality: at least 80% of words with a letter, 2 distinct stop words") {
  auto c = gopher_off();
  c.min_alpha_words_ratio = 0.8;
  CHECK(verdict(gq(repeat_words({"word"}, 80) + " " + repeat_words({"1234"}, 20), c)) == "kept");
  CHECK(verdict(gq(repeat_words({"word"}, 79) + " " + repeat_words({"1234"}, 21), c)) == "gopher_alpha_words");
  CHECK(verdict(gq(repeat_words({"\u0441\u043b\u043e\u0432\u043e"}, 10), c)) == "kept");  // Cyrillic letters count
  c = gopher_off();
  c.min_stop_words = 2;
  CHECK(verdict(gq("cats and the dogs", c)) == "kept");
  CHECK(verdict(gq("the cats, the dogs, the birds", c)) == "gopher_stop_words");  // one distinct
  CHECK(verdict(gq("(the) cats, with dogs", c)) == "kept");                      // punctuation stripped
}

TEST_CASE("Gopher repetition: duplicate lines and paragraphs, by count (0.3) and characters (0.2)") {
  auto c = repetition_off();
  c.dup_line_frac = 0.3;
  std::vector<std::string> lines;
  for (int i = 0; i < 10; ++i) lines.push_back("line number " + std::to_string(i));
  auto join = [](std::vector<std::string> v, const char* sep) { return repeat_words(v, v.size(), sep); };
  auto three = lines;
  three[7] = three[8] = three[9] = lines[0];
  auto four = three;
  four[6] = lines[0];
  CHECK(verdict(gr(join(three, "\n"), c)) == "kept");
  CHECK(verdict(gr(join(four, "\n"), c)) == "gopher_dup_line_frac");
  c = repetition_off();
  c.dup_para_frac = 0.3;
  CHECK(verdict(gr(join(three, "\n\n"), c)) == "kept");
  CHECK(verdict(gr(join(four, "\n\n"), c)) == "gopher_dup_para_frac");
  // Characters: a 20-character line repeated once in a 100-character text is exactly 0.2.
  c = repetition_off();
  c.dup_line_char_frac = 0.2;
  std::string a(20, 'a');
  CHECK(verdict(gr(a + "\n" + std::string(58, 'b') + "\n" + a, c)) == "kept");
  CHECK(verdict(gr(a + "\n" + std::string(57, 'b') + "\n" + a, c)) == "gopher_dup_line_char_frac");
  c = repetition_off();
  c.dup_para_char_frac = 0.2;
  CHECK(verdict(gr(a + "\n\n" + std::string(56, 'b') + "\n\n" + a, c)) == "kept");
  CHECK(verdict(gr(a + "\n\n" + std::string(55, 'b') + "\n\n" + a, c)) == "gopher_dup_para_char_frac");
}

TEST_CASE("Gopher repetition: the top 2-gram covers at most 20% of the characters") {
  auto c = repetition_off();
  c.top_ngram_frac = {0.20, -1, -1};
  // "xx yy" 4 times = 20 characters.
  const std::string head = "xx yy xx yy xx yy xx yy";
  CHECK(verdict(gr(pad_to(head, 100), c)) == "kept");
  CHECK(verdict(gr(pad_to(head, 99), c)) == "gopher_top_2gram");
  c.top_ngram_frac = {-1, 0.18, -1};
  const std::string head3 = "xx yy zz xx yy zz xx yy zz";  // "xx yy zz" (8) x 3 = 24 characters
  CHECK(verdict(gr(pad_to(head3, 134), c)) == "kept");           // 24/134 = 0.179
  CHECK(verdict(gr(pad_to(head3, 133), c)) == "gopher_top_3gram");  // 24/133 = 0.1805
}

TEST_CASE("Gopher repetition: the top 4-gram covers at most 16% of the characters") {
  auto c = repetition_off();
  c.top_ngram_frac = {-1, -1, 0.16};
  const std::string head = "xx yy zz ww xx yy zz ww xx yy zz ww";  // "xx yy zz ww" (11) x 3 = 33
  CHECK(verdict(gr(pad_to(head, 207), c)) == "kept");               // 33/207 = 0.1594
  CHECK(verdict(gr(pad_to(head, 206), c)) == "gopher_top_4gram");   // 33/206 = 0.1602
}

TEST_CASE("Gopher repetition: duplicated n-grams, n = 5..10, at most 0.15 .. 0.10") {
  const double limits[] = {0.15, 0.14, 0.13, 0.12, 0.11, 0.10};
  for (size_t n = 5; n <= 10; ++n) {
    CAPTURE(n);
    auto c = repetition_off();
    c.dup_ngram_frac[n - 5] = limits[n - 5];
    // n distinct two-letter words, twice: the second copy repeats 2n characters.
    std::string once;
    for (size_t i = 0; i < n; ++i) once += std::string(i ? " " : "") + "a" + char('0' + i);
    const std::string head = once + " " + once;
    size_t inside = size_t(std::ceil(2.0 * double(n) / limits[n - 5] - 1e-9));
    CHECK(verdict(gr(pad_to(head, inside), c)) == "kept");
    CHECK(verdict(gr(pad_to(head, inside - 1), c)) == "gopher_dup_" + std::to_string(n) + "gram");
  }
}

TEST_CASE("Gopher repetition: duplicated 5-grams cover at most 15% of the characters") {
  auto c = repetition_off();
  c.dup_ngram_frac = {0.15, -1, -1, -1, -1, -1};
  // The second "a1 a2 a3 a4 a5" repeats 10 characters (joined without spaces).
  const std::string head = "a1 a2 a3 a4 a5 a1 a2 a3 a4 a5";
  CHECK(verdict(gr(pad_to(head, 67), c)) == "kept");              // 10/67 = 0.149
  CHECK(verdict(gr(pad_to(head, 66), c)) == "gopher_dup_5gram");  // 10/66 = 0.152
  CHECK(GopherRepetitionConfig{}.dup_ngram_frac == std::vector<double>{0.15, 0.14, 0.13, 0.12, 0.11, 0.10});
  CHECK(GopherRepetitionConfig{}.top_ngram_frac == std::vector<double>{0.20, 0.18, 0.16});
}

namespace {

const char* c4(const std::string& text, const C4Config& c, std::string* kept = nullptr) {
  DocText d;
  d.reset(text);
  std::string k;
  const char* r = c4_quality(d, c, k);
  if (kept) *kept = k;
  return r;
}

}  // namespace

TEST_CASE("C4: line rules (terminal punctuation, words per line, javascript, policy, citations)") {
  C4Config c;
  c.min_sentences = 1;
  std::string kept;
  CHECK(verdict(c4("Three words here.\nNo final mark\nTwo words.\nEnds in dots...\nIt said \"hi.\"", c, &kept)) == "kept");
  CHECK(kept == "Three words here.\nIt said \"hi.\"");
  CHECK(verdict(c4("Please enable JavaScript to view.\nA real sentence here.", c, &kept)) == "kept");
  CHECK(kept == "A real sentence here.");
  CHECK(verdict(c4("Read our Privacy Policy now.\nThis site uses cookies today.\nA real sentence here.", c, &kept)) ==
        "kept");
  CHECK(kept == "A real sentence here.");
  CHECK(verdict(c4("Water boils at 100 degrees.[1] It is hot.[citation needed]", c, &kept)) == "kept");
  CHECK(kept == "Water boils at 100 degrees. It is hot.");
  c.min_words_per_line = 5;  // TFDS
  CHECK(verdict(c4("Only four words here.\nNow there are five words.", c, &kept)) == "kept");
  CHECK(kept == "Now there are five words.");
}

TEST_CASE("C4: page rules (lorem ipsum, curly brace, sentence minimum 5)") {
  C4Config c;
  CHECK(verdict(c4("One two three. Four five six. Seven eight nine. Ten eleven twelve. Thirteen fourteen fifteen.", c)) ==
        "kept");
  CHECK(verdict(c4("One two three. Four five six. Seven eight nine. Ten eleven twelve.", c)) ==
        "c4_too_few_sentences");
  CHECK(verdict(c4("One two three. Four five six.\nSeven eight nine.\nTen eleven twelve! Thirteen fourteen?", c)) ==
        "kept");
  c.min_sentences = 1;
  CHECK(verdict(c4("Lorem Ipsum dolor sit amet.", c)) == "c4_lorem_ipsum");
  CHECK(verdict(c4("Use a dict like {a: 1} here.", c)) == "c4_curly_bracket");
  CHECK(verdict(c4("code { without a final mark", c)) == "c4_too_few_sentences");  // the line went first
  c.curly_bracket = false;
  CHECK(verdict(c4("Use a dict like {a: 1} here.", c)) == "kept");
}

namespace {

const char* fw(const std::string& text, const FineWebConfig& c) {
  DocText d;
  d.reset(text);
  return fineweb_quality(d, c);
}

FineWebConfig fineweb_off() { return {-1, 30, -1, -1, -1}; }

std::string numbered_lines(size_t n, size_t with_period, const std::string& body = "a line of text number ") {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += body + std::to_string(i) + (i < with_period ? ".\n" : "\n");
  return s;
}

}  // namespace

TEST_CASE("FineWeb: at least 12% of lines end in punctuation") {
  auto c = fineweb_off();
  c.min_line_punct_ratio = 0.12;
  CHECK(verdict(fw(numbered_lines(100, 12), c)) == "kept");
  CHECK(verdict(fw(numbered_lines(100, 11), c)) == "fineweb_line_punct_ratio");
  CHECK(verdict(fw("", c)) == "fineweb_empty");
}

TEST_CASE("FineWeb: at most 67% of lines of 30 characters or fewer") {
  auto c = fineweb_off();
  c.max_short_line_ratio = 0.67;
  std::string text;
  for (int i = 0; i < 100; ++i) text += std::string(i < 67 ? 30 : 31, 'x') + "\n";
  CHECK(verdict(fw(text, c)) == "kept");
  text.clear();
  for (int i = 0; i < 100; ++i) text += std::string(i < 68 ? 30 : 31, 'x') + "\n";
  CHECK(verdict(fw(text, c)) == "fineweb_short_line_ratio");
}

TEST_CASE("FineWeb: characters in duplicated lines at most 1%, newlines per word at most 0.3") {
  auto c = fineweb_off();
  c.max_char_dup_ratio = 0.01;
  // 10 repeated characters in 1000 (without newlines) = 0.01.
  std::string dup = "0123456789";
  CHECK(verdict(fw(dup + "\n" + std::string(980, 'z') + "\n" + dup, c)) == "kept");
  CHECK(verdict(fw(dup + "\n" + std::string(979, 'z') + "\n" + dup, c)) == "fineweb_char_dup_ratio");
  c = fineweb_off();
  c.max_newline_ratio = 0.3;
  CHECK(verdict(fw("a b c\nd e f\ng h i\nj", c)) == "kept");                // 3 newlines / 10 words
  CHECK(verdict(fw("a b c\nd e f\ng h\ni", c)) == "fineweb_list_ratio");   // 3 / 9
}

TEST_CASE("minimum length in characters and words") {
  DocText d;
  d.reset("h\u00e9llo world");  // 11 characters, 2 words
  CHECK(verdict(length_rule(d, {.min_chars = 11})) == "kept");
  CHECK(verdict(length_rule(d, {.min_chars = 12})) == "min_chars");
  CHECK(verdict(length_rule(d, {.min_words = 2})) == "kept");
  CHECK(verdict(length_rule(d, {.min_words = 3})) == "min_words");
}
