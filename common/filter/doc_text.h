// One document's text cut the way the quality rules look at it, computed once and shared by them.
//   tokens: whitespace-separated pieces; words: tokens with leading/trailing ASCII punctuation
//   stripped, empty ones dropped (a stand-in for datatrove's word tokenizers, which split
//   punctuation off); lines: split on '\n'. Lengths are in code points, as Python's len().
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace suite::filter {

inline bool is_ascii_punct(unsigned char c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}
inline bool is_ascii_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// Code points in UTF-8 text.
size_t count_code_points(std::string_view s);
// Occurrences of `needle` (non-overlapping, like Python's str.count).
size_t count_substr(std::string_view s, std::string_view needle);
// True when any character is a letter (ASCII letters, or any non-ASCII letter per Unicode).
bool has_letter(std::string_view word);
// Strips Python's str.strip() whitespace from both ends.
std::string_view strip(std::string_view s);

class DocText {
 public:
  void reset(std::string_view text);
  std::string_view text() const { return text_; }
  size_t chars();                                  // code points of the whole text
  const std::vector<std::string_view>& tokens();   // whitespace split
  const std::vector<std::string_view>& words();    // punctuation-stripped non-empty tokens
  const std::vector<std::string_view>& lines();    // split on '\n' (empty lines kept)

 private:
  std::string_view text_;
  size_t chars_ = SIZE_MAX;
  bool tokens_ready_ = false, lines_ready_ = false;
  std::vector<std::string_view> tokens_, words_, lines_;
};

}  // namespace suite::filter
