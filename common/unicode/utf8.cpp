#include "common/unicode/utf8.h"

namespace suite::unicode {

namespace {
// Allowed range of the second byte for each lead byte (Unicode Table 3-7); others are 80..BF.
bool second_byte_ok(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

int sequence_length_for_lead(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;  // continuation byte, C0/C1, F5..FF: never valid as a lead
}

// Number of bytes at i that form a valid prefix of a well-formed sequence (>= 1 for a valid
// lead), and the full length the lead asks for.
size_t valid_prefix(std::string_view s, size_t i, int& need) {
  auto lead = static_cast<unsigned char>(s[i]);
  need = sequence_length_for_lead(lead);
  if (need <= 1) return need;
  size_t k = 1;
  if (i + 1 >= s.size() || !second_byte_ok(lead, static_cast<unsigned char>(s[i + 1]))) return k;
  ++k;
  while (k < static_cast<size_t>(need) && i + k < s.size() &&
         (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80)
    ++k;
  return k;
}
}  // namespace

size_t utf8_valid_sequence_length(std::string_view s, size_t i) {
  int need = 0;
  size_t k = valid_prefix(s, i, need);
  return (need > 0 && k == static_cast<size_t>(need)) ? k : 0;
}

size_t utf8_invalid_length(std::string_view s, size_t i) {
  int need = 0;
  size_t k = valid_prefix(s, i, need);
  return k == 0 ? 1 : k;  // an invalid lead byte is a subpart of its own
}

size_t utf8_first_invalid(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t len = utf8_valid_sequence_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return n;
}

size_t utf8_repair_append(std::string_view s, std::string& out) {
  size_t replaced = 0, i = 0;
  while (i < s.size()) {
    size_t bad = utf8_first_invalid(s.substr(i)) + i;
    out.append(s.data() + i, bad - i);
    if (bad == s.size()) break;
    out.append("\xEF\xBF\xBD");
    ++replaced;
    i = bad + utf8_invalid_length(s, bad);
  }
  return replaced;
}

std::string utf8_repair(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  utf8_repair_append(s, out);
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace suite::unicode
