// UTF-8 validation and U+FFFD repair of maximal subparts (Unicode §3.9 / WHATWG / Python
// bytes.decode('utf-8', 'replace')).
#include <doctest/doctest.h>

#include "common/unicode/utf8.h"

using namespace suite::unicode;

namespace {
const std::string R = "\xEF\xBF\xBD";
}

TEST_CASE("valid UTF-8 is accepted and unchanged") {
  std::string s = "plain ascii, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x91\x8D, \xF4\x8F\xBF\xBF";
  CHECK(utf8_is_valid(s));
  CHECK(utf8_repair(s) == s);
  CHECK(utf8_is_valid(""));
}

TEST_CASE("each maximal invalid subpart becomes one U+FFFD") {
  // The Unicode standard's example (Table 3-8): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
  CHECK(utf8_repair("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64") ==
        "a" + R + R + R + "b" + R + "c" + R + R + "d");
  CHECK(utf8_repair("\xC0\xAF") == R + R);              // overlong lead C0 is never valid
  CHECK(utf8_repair("\xE0\x80\x80") == R + R + R);      // E0 needs A0..BF next
  CHECK(utf8_repair("\xED\xA0\x80") == R + R + R);      // surrogate
  CHECK(utf8_repair("\xF4\x90\x80\x80") == R + R + R + R);  // above U+10FFFF
  CHECK(utf8_repair("\xF5") == R);
  CHECK(utf8_repair("\xE2\x82") == R);                  // truncated at end: one subpart
  CHECK(utf8_repair("\xF0\x9F\x91 x") == R + " x");
  CHECK(utf8_repair("\xFF\xFE") == R + R);
  std::string out;
  CHECK(utf8_repair_append("a\x80\x80", out) == 2);
  CHECK(utf8_first_invalid("ok\xC3") == 2);
}

TEST_CASE("decode and append round-trip every scalar value class") {
  for (char32_t cp : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    std::string s;
    utf8_append(s, cp);
    char32_t back = 0;
    CHECK(utf8_decode(reinterpret_cast<const unsigned char*>(s.data()), s.size(), back) == s.size());
    CHECK(back == cp);
    CHECK(utf8_is_valid(s));
  }
  char32_t cp = 0;
  CHECK(utf8_decode(reinterpret_cast<const unsigned char*>("\xC3"), 1, cp) == 1);
  CHECK(cp == kReplacementChar);
}
