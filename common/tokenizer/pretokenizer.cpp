#include "common/tokenizer/pretokenizer.h"

#include <array>

#include "common/unicode/char_class.h"
#include "common/unicode/utf8.h"

namespace suite::bpe {

using unicode::CharClass;

namespace {
constexpr std::array<CharClass, 128> kAsciiClass = [] {
  std::array<CharClass, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) t[c] = CharClass::kLetter;
    else if (c >= '0' && c <= '9') t[c] = CharClass::kNumber;
    else if ((c >= 0x09 && c <= 0x0D) || c == ' ') t[c] = CharClass::kSpace;
    else t[c] = CharClass::kOther;
  }
  return t;
}();

struct Scanner {
  const unsigned char* s;
  size_t n;
  const unicode::CharClassTable& table;

  // Class and byte length of the character at i (i < n).
  CharClass at(size_t i, size_t& len) const {
    unsigned char b = s[i];
    if (b < 0x80) {
      len = 1;
      return kAsciiClass[b];
    }
    char32_t cp;
    len = unicode::utf8_decode(s + i, n - i, cp);
    return table(cp);  // an invalid byte decodes to U+FFFD, class "other"
  }

  // End of the maximal run of class c starting at j.
  size_t run_end(size_t j, CharClass c) const {
    while (j < n) {
      unsigned char b = s[j];
      if (b < 0x80) {
        if (kAsciiClass[b] != c) break;
        ++j;
      } else {
        size_t len;
        if (at(j, len) != c) break;
        j += len;
      }
    }
    return j;
  }

  // Length of a contraction ('s 't 'm 'd 'll 've 're) at i, or 0.
  size_t contraction(size_t i) const {
    if (i + 1 >= n) return 0;
    unsigned char a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 >= n) return 0;
    unsigned char b = s[i + 2];
    if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e')) return 3;
    return 0;
  }

  size_t piece_end(size_t i) const {
    if (s[i] == '\'') {
      if (size_t k = contraction(i)) return i + k;
    }
    size_t len;
    CharClass c = at(i, len);
    if (c != CharClass::kSpace) return run_end(i + len, c);
    if (s[i] == ' ' && i + 1 < n) {
      size_t len2;
      CharClass c2 = at(i + 1, len2);
      if (c2 != CharClass::kSpace) return run_end(i + 1 + len2, c2);  // " ?" prefix
    }
    // Whitespace run: if more than one character and followed by non-space, give back the
    // last character (one code point) so it can prefix the next piece.
    size_t j = i + len, last = i;
    while (j < n) {
      unsigned char b = s[j];
      size_t l = 1;
      if (b < 0x80 ? kAsciiClass[b] != CharClass::kSpace : at(j, l) != CharClass::kSpace) break;
      last = j;
      j += l;
    }
    if (j == n || last == i) return j;
    return last;
  }
};
}  // namespace

size_t next_piece_end(std::string_view text, size_t pos) {
  Scanner sc{reinterpret_cast<const unsigned char*>(text.data()), text.size(),
             unicode::CharClassTable::get()};
  return sc.piece_end(pos);
}

std::vector<std::string_view> split_pieces(std::string_view text) {
  std::vector<std::string_view> out;
  for_each_piece(text, [&](std::string_view p) { out.push_back(p); });
  return out;
}

}  // namespace suite::bpe
