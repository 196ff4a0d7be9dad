#include "common/sentences/text_scan.h"

#include <unicode/uchar.h>

#include "common/unicode/utf8.h"

namespace suite::sentences {
namespace {

bool ends_with(std::string_view s, size_t end, std::string_view mark) {
  return end >= mark.size() && s.substr(end - mark.size(), mark.size()) == mark;
}

}  // namespace

size_t closer_before(std::string_view s, size_t end) {
  if (end == 0) return 0;
  switch (s[end - 1]) {
    case '"': case '\'': case ')': case ']': case '}': return 1;
    default: break;
  }
  for (std::string_view m : {"\u201D", "\u2019", "\u00BB"})
    if (ends_with(s, end, m)) return m.size();
  return 0;
}

size_t opener_at(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  switch (s[pos]) {
    case '"': case '\'': case '(': case '[': case '{': return 1;
    default: break;
  }
  for (std::string_view m : {"\u201C", "\u2018", "\u00AB", "\u00BF", "\u00A1"})
    if (s.substr(pos, m.size()) == m) return m.size();
  return 0;
}

size_t bullet_before(std::string_view s, size_t end) {
  if (end == 0) return 0;
  if (s[end - 1] == '-' || s[end - 1] == '*') return 1;
  for (std::string_view m : {"\u2022", "\u2023", "\u2043", "\u25E6"})
    if (ends_with(s, end, m)) return m.size();
  return 0;
}

NextWord next_word(std::string_view s, size_t pos) {
  NextWord w;
  for (size_t n; (n = opener_at(s, pos)) > 0;) pos += n;
  if (pos >= s.size()) return w;
  auto c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) {
    w.kind = is_ascii_lower(c) ? CharKind::kLower
             : is_ascii_upper(c) ? CharKind::kUpper
             : is_ascii_digit(c) ? CharKind::kDigit
                                 : CharKind::kOther;
    size_t e = pos;
    while (e < s.size() && (is_ascii_lower(s[e]) || is_ascii_upper(s[e]))) ++e;
    w.ascii_word = s.substr(pos, e - pos);
    return w;
  }
  char32_t cp;
  unicode::utf8_decode(reinterpret_cast<const unsigned char*>(s.data() + pos), s.size() - pos, cp);
  w.kind = u_islower(cp) ? CharKind::kLower : u_isupper(cp) || u_istitle(cp) ? CharKind::kUpper
           : u_isdigit(cp)                                                   ? CharKind::kDigit
                                                                             : CharKind::kOther;
  return w;
}

bool has_alnum(std::string_view s) {
  auto p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    if (p[i] < 0x80) {
      if (is_ascii_alnum(p[i])) return true;
      ++i;
      continue;
    }
    char32_t cp;
    i += unicode::utf8_decode(p + i, s.size() - i, cp);
    if (u_isalnum(cp)) return true;
  }
  return false;
}

}  // namespace suite::sentences
