// Document quality rules with the published thresholds (datatrove's implementations of Gopher,
// C4 and FineWeb; see /docs in README for the sources). Each rule returns the name of the check
// that drops the document, or nullptr to keep it. A threshold < 0 turns its check off.
#pragma once

#include <string>
#include <vector>

#include "common/filter/doc_text.h"

namespace suite::filter {

// Gopher quality (Rae et al. 2021, MassiveText): datatrove GopherQualityFilter defaults.
struct GopherQualityConfig {
  long min_words = 50, max_words = 100000;
  double min_avg_word_length = 3, max_avg_word_length = 10;
  double max_symbol_word_ratio = 0.1;       // '#' and ellipses per token
  double max_bullet_lines_ratio = 0.9;      // lines starting with '•' or '-'
  double max_ellipsis_lines_ratio = 0.3;    // lines ending in "..." or '…'
  double min_alpha_words_ratio = 0.8;       // tokens containing a letter
  long min_stop_words = 2;                  // distinct of {the be to of and that have with}
};
const char* gopher_quality(DocText& doc, const GopherQualityConfig& c);

// Gopher repetition: datatrove GopherRepetitionFilter defaults.
struct GopherRepetitionConfig {
  double dup_line_frac = 0.3, dup_para_frac = 0.3, dup_line_char_frac = 0.2, dup_para_char_frac = 0.2;
  std::vector<double> top_ngram_frac = {0.20, 0.18, 0.16};              // n = 2, 3, 4
  std::vector<double> dup_ngram_frac = {0.15, 0.14, 0.13, 0.12, 0.11, 0.10};  // n = 5..10
};
class GopherRepetition {
 public:
  const char* check(DocText& doc, const GopherRepetitionConfig& c);

 private:
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> lengths_;
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> counts_;
};

// C4 (Raffel et al. 2020) as datatrove's C4QualityFilter: lines are stripped; a line is removed when
// it has a word over max_word_length, does not end in terminal punctuation (or ends in "..."), has
// fewer than min_words_per_line words, mentions "javascript" or a cookie/privacy policy phrase;
// citation marks ([1], [edit], [citation needed]) are cut. "lorem ipsum" or '{' in a kept line drops
// the page, and so do fewer than min_sentences sentences in the kept lines. The kept lines become
// the text. (TFDS's reference code uses 5 words per line and 3 sentences: --c4-min-words-per-line 5
// --c4-min-sentences 3.)
struct C4Config {
  long min_words_per_line = 3;
  long min_sentences = 5;
  long max_word_length = 1000;
  bool terminal_punct = true, javascript = true, lorem_ipsum = true, curly_bracket = true, policy = true,
       citations = true;
};
// On keep, `kept` holds the text made of the kept lines.
const char* c4_quality(DocText& doc, const C4Config& c, std::string& kept);

// FineWeb's three rules (datatrove FineWebQualityFilter) plus its newline-per-word "list" ratio.
struct FineWebConfig {
  double min_line_punct_ratio = 0.12;  // share of non-empty lines ending in terminal punctuation
  long short_line_length = 30;
  double max_short_line_ratio = 0.67;  // share of lines of <= 30 characters
  double max_char_dup_ratio = 0.01;    // characters in duplicated lines / characters without '\n'
  double max_newline_ratio = 0.3;      // '\n' per word
};
const char* fineweb_quality(DocText& doc, const FineWebConfig& c);

// Minimum length in code points and words (0 = off).
struct LengthConfig {
  long min_chars = 0, min_words = 0;
};
const char* length_rule(DocText& doc, const LengthConfig& c);

// Does the (right-stripped) line end in a terminal punctuation mark of any script?
bool ends_in_terminal_punct(std::string_view line);

}  // namespace suite::filter
