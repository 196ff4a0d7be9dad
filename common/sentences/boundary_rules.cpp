#include "common/sentences/boundary_rules.h"

#include "common/sentences/text_scan.h"

namespace suite::sentences {
namespace {

// The token that ends at the period at `dot`: back to white space, without opening marks.
std::string_view word_before_period(std::string_view text, size_t dot, size_t& start) {
  size_t s = dot;
  while (s > 0 && !is_space_byte(text[s - 1])) --s;
  for (size_t n; s < dot && (n = opener_at(text, s)) > 0;) s += n;
  start = s;
  return text.substr(s, dot - s);
}

// "U.S", "e.g", "E.U", "a.m": single letters joined by periods.
bool is_letter_dot_chain(std::string_view w) {
  if (w.size() < 3 || w.size() % 2 == 0) return false;
  for (size_t i = 0; i < w.size(); ++i) {
    bool want_letter = i % 2 == 0;
    unsigned char c = w[i];
    if (want_letter ? !(is_ascii_lower(c) || is_ascii_upper(c)) : c != '.') return false;
  }
  return true;
}

bool previous_word_capitalised(std::string_view text, size_t word_start) {
  size_t e = word_start - spaces_before(text, word_start);
  size_t s = e;
  while (s > 0 && !is_space_byte(text[s - 1])) --s;
  for (size_t n; s < e && (n = opener_at(text, s)) > 0;) s += n;
  return s < e && is_ascii_upper(text[s]);
}

bool keep_after_period(std::string_view text, size_t dot, const NextWord& next, const AbbreviationTable& abbr) {
  size_t start;
  std::string_view w = word_before_period(text, dot, start);
  if (w.empty()) return true;
  if (next.kind == CharKind::kDigit) {
    char lower[8];
    if (w.size() <= sizeof lower) {
      for (size_t i = 0; i < w.size(); ++i) lower[i] = is_ascii_upper(w[i]) ? char(w[i] + 32) : w[i];
      if (abbr.is_numeric(std::string_view(lower, w.size()))) return false;
    }
  }
  if (abbr.is_title(w)) return false;
  // "z. B.", "d. h.", "u. a.": a letter and a period, then another letter and a period.
  if (w.size() == 1 && is_ascii_lower(w[0]) && next.ascii_word.size() == 1) {
    size_t after = static_cast<size_t>(next.ascii_word.data() - text.data()) + 1;  // a view into text
    if (after < text.size() && text[after] == '.' && (after + 1 == text.size() || is_space_byte(text[after + 1])))
      return false;
  }
  if (abbr.ordinal_period() && w.size() <= 2 && is_ascii_digit(w[0]) && is_ascii_digit(w.back()) &&
      next.kind != CharKind::kNone && next.kind != CharKind::kOther)
    return false;
  bool starter = abbr.has_starters() && abbr.is_starter(next.ascii_word);
  if (w.size() == 1 && is_ascii_upper(w[0])) {  // an initial ("Jonas E. Smith"), or "you and I."
    if (next.kind == CharKind::kLower) return false;
    if (w[0] == 'I' && !previous_word_capitalised(text, start)) return true;
    return starter;
  }
  if (w == "A.M" || w == "P.M") return next.kind == CharKind::kUpper;  // "at 6 P.M. Mr. Smith" ends there
  if (abbr.is_generic(w) || is_letter_dot_chain(w)) {
    if (next.kind == CharKind::kUpper) return starter;
    return next.kind == CharKind::kOther || next.kind == CharKind::kNone;
  }
  return true;
}

bool is_newline_byte(unsigned char c) { return c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

bool keep_icu_break(std::string_view text, size_t b, const AbbreviationTable& abbr, NewlineMode newlines) {
  if (b == 0 || b >= text.size()) return true;
  size_t e = b - spaces_before(text, b);
  int newline_count = 0;
  for (size_t i = e; i < b; ++i)
    if (text[i] == '\n' || (is_newline_byte(text[i]) && !(text[i] == '\r' && i + 1 < b && text[i + 1] == '\n')))
      ++newline_count;
  // U+0085, U+2028, U+2029 end a line too; ICU breaks after them.
  bool unicode_newline = (b >= 2 && text.substr(b - 2, 2) == "\u0085") ||
                         (b >= 3 && (text.substr(b - 3, 3) == "\u2028" || text.substr(b - 3, 3) == "\u2029"));
  size_t t = e;
  for (size_t n; (n = closer_before(text, t)) > 0;) t -= n;
  unsigned char term = t > 0 ? text[t - 1] : 0;
  if (newline_count > 0 || unicode_newline) {
    if (newlines == NewlineMode::kLine || newline_count >= 2 || unicode_newline) return true;
    if (term != '.' && term != '!' && term != '?') return false;  // a line wrapped mid-sentence
  }
  if (e == b) {  // no white space: "Jane.Doe", "example.com", "node.Js" are not boundaries
    return !(text[b - 1] == '.' && is_ascii_alnum(text[b]));
  }
  NextWord next = next_word(text, b);
  if (term == '!' || term == '?') return next.kind != CharKind::kLower;  // "Yahoo! in the ..."
  if (term != '.') return true;
  size_t dot = t - 1;
  if (dot > 0 && (text[dot - 1] == '.' || (dot > 1 && text[dot - 1] == ' ' && text[dot - 2] == '.')))
    return true;  // an ellipsis: find_punctuation_edits decides
  return keep_after_period(text, dot, next, abbr);
}

}  // namespace suite::sentences
