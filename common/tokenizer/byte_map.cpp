#include "common/tokenizer/byte_map.h"

#include <array>

#include "common/unicode/utf8.h"

namespace suite::bpe {

namespace {
constexpr bool is_printable_byte(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 0x144> to_byte{};  // stand-ins are all below U+0144
  std::array<uint8_t, 256> char_order{};
  constexpr Tables() {
    for (auto& v : to_byte) v = -1;
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      to_char[b] = is_printable_byte(b) ? char32_t(b) : char32_t(0x100 + extra++);
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
    int i = 0;
    for (int c = 0; c < 0x144; ++c)
      if (to_byte[c] >= 0) char_order[i++] = static_cast<uint8_t>(to_byte[c]);
  }
};
constexpr Tables kTables;
static_assert(kTables.to_char[' '] == 0x120 && kTables.to_char['\n'] == 0x10A);
static_assert(kTables.char_order[0] == '!' && kTables.char_order[188] == 0 &&
              kTables.char_order[220] == ' ' && kTables.char_order[255] == 0xAD);
}  // namespace

char32_t byte_to_char(uint8_t b) { return kTables.to_char[b]; }

int char_to_byte(char32_t cp) { return cp < kTables.to_byte.size() ? kTables.to_byte[cp] : -1; }

uint8_t byte_in_char_order(int i) { return kTables.char_order[static_cast<uint8_t>(i)]; }

std::string bytes_to_token_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) unicode::utf8_append(out, kTables.to_char[b]);
  return out;
}

bool token_text_to_bytes(std::string_view text, std::string& out) {
  auto p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    char32_t cp;
    size_t len = unicode::utf8_decode(p + i, n - i, cp);
    int b = (cp == unicode::kReplacementChar && len == 1) ? -1 : char_to_byte(cp);
    if (b < 0) return false;
    out.push_back(static_cast<char>(b));
    i += len;
  }
  return true;
}

}  // namespace suite::bpe
