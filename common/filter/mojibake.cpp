#include "common/filter/mojibake.h"

#include <cstring>

#include "common/unicode/utf8.h"

namespace suite::filter {
namespace {

// The byte that Windows-1252 (or, for its five holes, Latin-1) decodes to `cp`; -1 if none.
int cp1252_byte(char32_t cp) {
  if (cp >= 0xA0 && cp <= 0xFF) return int(cp);
  if (cp >= 0x80 && cp <= 0x9F) return int(cp);  // Latin-1 C1 range (and cp1252's undefined bytes)
  switch (cp) {
    case 0x20AC: return 0x80;
    case 0x201A: return 0x82;
    case 0x0192: return 0x83;
    case 0x201E: return 0x84;
    case 0x2026: return 0x85;
    case 0x2020: return 0x86;
    case 0x2021: return 0x87;
    case 0x02C6: return 0x88;
    case 0x2030: return 0x89;
    case 0x0160: return 0x8A;
    case 0x2039: return 0x8B;
    case 0x0152: return 0x8C;
    case 0x017D: return 0x8E;
    case 0x2018: return 0x91;
    case 0x2019: return 0x92;
    case 0x201C: return 0x93;
    case 0x201D: return 0x94;
    case 0x2022: return 0x95;
    case 0x2013: return 0x96;
    case 0x2014: return 0x97;
    case 0x02DC: return 0x98;
    case 0x2122: return 0x99;
    case 0x0161: return 0x9A;
    case 0x203A: return 0x9B;
    case 0x0153: return 0x9C;
    case 0x017E: return 0x9E;
    case 0x0178: return 0x9F;
    default: return -1;
  }
}

size_t fix_once(std::string_view text, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t fixed = 0, i = 0, copied = 0;
  while (i < n) {
    // Lead characters U+00C2..U+00F4 are encoded as C3 82..C3 B4.
    const void* hit = std::memchr(p + i, 0xC3, n - i);
    if (!hit) break;
    i = static_cast<const unsigned char*>(hit) - p;
    char32_t lead;
    size_t len = unicode::utf8_decode(p + i, n - i, lead);
    if (len != 2 || lead < 0xC2 || lead > 0xF4) {
      i += len;
      continue;
    }
    int need = lead < 0xE0 ? 1 : lead < 0xF0 ? 2 : 3;
    unsigned char bytes[4] = {static_cast<unsigned char>(lead)};
    size_t j = i + len;
    bool ok = true;
    for (int k = 1; k <= need && ok; ++k) {
      if (j >= n) {
        ok = false;
        break;
      }
      char32_t cp;
      size_t l = unicode::utf8_decode(p + j, n - j, cp);
      int b = cp1252_byte(cp);
      if (b < 0x80 || b > 0xBF) ok = false;
      bytes[k] = static_cast<unsigned char>(b);
      j += l;
    }
    char32_t decoded;
    if (ok && unicode::utf8_decode(bytes, size_t(need + 1), decoded) == size_t(need + 1) && decoded != 0xFFFD) {
      out.append(text.data() + copied, i - copied);
      out.append(reinterpret_cast<const char*>(bytes), size_t(need + 1));
      copied = i = j;
      ++fixed;
    } else {
      i += len;
    }
  }
  out.append(text.data() + copied, n - copied);
  return fixed;
}

}  // namespace

bool may_contain_mojibake(std::string_view text) { return text.find('\xC3') != std::string_view::npos; }

size_t fix_mojibake(std::string_view text, std::string& out) {
  if (!may_contain_mojibake(text)) {
    out.append(text);
    return 0;
  }
  std::string first;
  size_t fixed = fix_once(text, first);
  if (fixed == 0 || !may_contain_mojibake(first)) {
    out += first;
    return fixed;
  }
  return fixed + fix_once(first, out);
}

}  // namespace suite::filter
