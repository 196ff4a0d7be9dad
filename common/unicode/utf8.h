// Small UTF-8 helpers: validation, repair of invalid input, decoding one code point.
//
// Repair follows the Unicode "maximal subpart" practice (Unicode §3.9, U+FFFD substitution of
// maximal subparts; the same as Python's bytes.decode('utf-8', 'replace') and the WHATWG
// decoder): each maximal prefix of a valid sequence that cannot be completed, or else each
// single invalid byte, becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace suite::unicode {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if the bytes at i are not a
// complete valid sequence. Rejects overlongs, surrogates and code points above U+10FFFF.
size_t utf8_valid_sequence_length(std::string_view s, size_t i);

// Length of the maximal subpart at s[i] when s[i] does not start a valid sequence (>= 1).
size_t utf8_invalid_length(std::string_view s, size_t i);

// Offset of the first invalid byte, or s.size() when s is valid UTF-8.
size_t utf8_first_invalid(std::string_view s);
inline bool utf8_is_valid(std::string_view s) { return utf8_first_invalid(s) == s.size(); }

// Appends s to out with every maximal invalid subpart replaced by U+FFFD (EF BF BD).
// Returns the number of replacements made.
size_t utf8_repair_append(std::string_view s, std::string& out);
std::string utf8_repair(std::string_view s);

// Appends the UTF-8 encoding of cp (cp must be a Unicode scalar value).
void utf8_append(std::string& out, char32_t cp);

// Decodes the code point at p (at most `avail` bytes readable) and returns its byte length.
// For bytes that do not start a valid sequence, returns 1 and sets cp to U+FFFD, so scanning
// never stalls on invalid input.
inline size_t utf8_decode(const unsigned char* p, size_t avail, char32_t& cp) {
  unsigned char b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  if (b0 >= 0xC2 && b0 < 0xE0 && avail >= 2 && (p[1] & 0xC0) == 0x80) {
    cp = (char32_t(b0 & 0x1F) << 6) | (p[1] & 0x3F);
    return 2;
  }
  if (b0 >= 0xE0 && b0 < 0xF0 && avail >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
    char32_t c = (char32_t(b0 & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    if (c >= 0x800 && (c < 0xD800 || c > 0xDFFF)) {
      cp = c;
      return 3;
    }
  } else if (b0 >= 0xF0 && b0 < 0xF5 && avail >= 4 && (p[1] & 0xC0) == 0x80 &&
             (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) {
    char32_t c = (char32_t(b0 & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) |
                 (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    if (c >= 0x10000 && c <= 0x10FFFF) {
      cp = c;
      return 4;
    }
  }
  cp = kReplacementChar;
  return 1;
}

}  // namespace suite::unicode
