#include "common/wiki/page_url.h"

namespace suite::wiki {

void append_page_url(std::string& out, std::string_view base, std::string_view title) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  static constexpr std::string_view kEncoded = "%?#&\"'<>+=\\^`{|}";
  out += base;
  for (char c : title) {
    auto u = static_cast<unsigned char>(c);
    if (c == ' ') {
      out += '_';
    } else if (u < 0x20 || u == 0x7F || kEncoded.find(c) != std::string_view::npos) {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
}

}  // namespace suite::wiki
