// Byte-level helpers for the rule pass: whitespace, closing and opening punctuation, and what the
// word after a candidate boundary looks like. Text is UTF-8; only ASCII and a few quote marks matter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace suite::sentences {

inline bool is_space_byte(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
inline bool is_ascii_digit(unsigned char c) { return c >= '0' && c <= '9'; }
inline bool is_ascii_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
inline bool is_ascii_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
inline bool is_ascii_alnum(unsigned char c) { return is_ascii_digit(c) || is_ascii_lower(c) || is_ascii_upper(c); }

// Length of the closing mark ending at `end` (exclusive): " ' ) ] } ” ’ », or 0.
size_t closer_before(std::string_view s, size_t end);
// Length of the opening mark at `pos`: " ' ( [ { “ ‘ « ¿ ¡, or 0.
size_t opener_at(std::string_view s, size_t pos);
// Length of a list bullet ending at `end`: • ‣ ⁃ ◦ - *, or 0.
size_t bullet_before(std::string_view s, size_t end);

// Number of white-space bytes ending at `end` / starting at `pos` (ASCII white space only).
inline size_t spaces_before(std::string_view s, size_t end) {
  size_t e = end;
  while (e > 0 && is_space_byte(s[e - 1])) --e;
  return end - e;
}
inline size_t spaces_after(std::string_view s, size_t pos) {
  size_t p = pos;
  while (p < s.size() && is_space_byte(s[p])) ++p;
  return p - pos;
}

enum class CharKind : uint8_t { kNone, kLower, kUpper, kDigit, kOther };

struct NextWord {
  CharKind kind = CharKind::kNone;
  std::string_view ascii_word;  // the leading ASCII letters (for the sentence-starter list)
};
// The word starting at `pos`, after opening marks.
NextWord next_word(std::string_view s, size_t pos);

// True when the text between two positions has a letter or digit (ASCII, or any non-ASCII letter).
bool has_alnum(std::string_view s);

}  // namespace suite::sentences
