#include <algorithm>
#include <array>

#include "common/filter/quality_rules.h"

namespace suite::filter {
namespace {

// Terminal punctuation of several scripts (a subset of datatrove's TERMINAL_PUNCTUATION).
constexpr std::array<std::string_view, 20> kTerminal = {
    ".", "!", "?", "\"", "'", "\u2026", "\u201D", "\u2019", "\u3002", "\uFF01", "\uFF1F", "\uFF0E",
    "\u0964", "\u0965", "\u061F", "\u06D4", "\u00BB", "\u037E", "\u0589", "\u1362"};

}  // namespace

bool ends_in_terminal_punct(std::string_view line) {
  while (!line.empty() && is_ascii_space(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
  for (std::string_view t : kTerminal)
    if (line.ends_with(t)) return true;
  return false;
}

const char* fineweb_quality(DocText& doc, const FineWebConfig& c) {
  std::vector<std::string_view> lines;
  for (std::string_view l : doc.lines())
    if (!strip(l).empty()) lines.push_back(l);
  if (lines.empty()) return "fineweb_empty";
  const double n = double(lines.size());
  if (c.min_line_punct_ratio >= 0) {
    size_t punct = 0;
    for (std::string_view l : lines) punct += ends_in_terminal_punct(l);
    if (double(punct) / n < c.min_line_punct_ratio) return "fineweb_line_punct_ratio";
  }
  if (c.max_short_line_ratio >= 0) {
    size_t short_lines = 0;
    for (std::string_view l : lines) short_lines += long(count_code_points(l)) <= c.short_line_length;
    if (double(short_lines) / n > c.max_short_line_ratio) return "fineweb_short_line_ratio";
  }
  if (c.max_char_dup_ratio >= 0) {
    // Characters in lines that repeat an earlier line, over the characters other than '\n'.
    std::vector<std::string_view> sorted = lines;
    size_t dup_chars = 0;
    // Sorting groups equal lines; every copy after the first counts, as in datatrove.
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 1; i < sorted.size(); ++i)
      if (sorted[i] == sorted[i - 1]) dup_chars += count_code_points(sorted[i]);
    size_t chars = doc.chars() - count_substr(doc.text(), "\n");
    if (chars > 0 && double(dup_chars) / double(chars) > c.max_char_dup_ratio) return "fineweb_char_dup_ratio";
  }
  if (c.max_newline_ratio >= 0) {
    size_t words = doc.words().size();
    double ratio = words ? double(count_substr(doc.text(), "\n")) / double(words) : 1e9;
    if (ratio > c.max_newline_ratio) return "fineweb_list_ratio";
  }
  return nullptr;
}

const char* length_rule(DocText& doc, const LengthConfig& c) {
  if (c.min_chars > 0 && long(doc.chars()) < c.min_chars) return "min_chars";
  if (c.min_words > 0 && long(doc.words().size()) < c.min_words) return "min_words";
  return nullptr;
}

}  // namespace suite::filter
