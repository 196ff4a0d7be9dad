// common/filter/mojibake and text_repair: known broken strings and the whitespace/NFC rules.
#include <doctest/doctest.h>

#include <string>

#include "common/filter/mojibake.h"
#include "common/filter/text_repair.h"

using namespace suite::filter;

namespace {

std::string unmojibake(std::string_view s) {
  std::string out;
  fix_mojibake(s, out);
  return out;
}

std::string repaired(std::string_view s, RepairConfig c = {}) {
  TextRepair r(c);
  std::string out;
  r.repair(s, out);
  return out;
}

}  // namespace

TEST_CASE("mojibake: UTF-8 read as Windows-1252 or Latin-1 is undone") {
  CHECK(unmojibake("cafÃ©") == "café");
  CHECK(unmojibake("Ã¼ber straÃŸe") == "über straße");
  CHECK(unmojibake("donâ€™t") == "don’t");                  // U+2019 via cp1252's 0x80 and 0x99
  CHECK(unmojibake("â€œquotedâ€\u009d") == "“quoted”");      // 0x9D is a Latin-1 C1 character
  CHECK(unmojibake("Â£5 and 20Â°C") == "£5 and 20°C");
  CHECK(unmojibake("ðŸ˜€ smile") == "😀 smile");            // four-byte sequence
  CHECK(unmojibake("ÐŸÑ€Ð¸Ð²ÐµÑ‚") == "Привет");
  CHECK(unmojibake("cafÃƒÂ©") == "café");                  // broken twice
}

TEST_CASE("mojibake: correct text is left alone") {
  for (const char* ok : {"café", "naïve", "Ã la carte", "À bientôt", "plain ASCII", "Ãx", "100 Â", "日本語"})
    CHECK(unmojibake(ok) == ok);
  CHECK_FALSE(may_contain_mojibake("plain"));
}

TEST_CASE("repair: line endings, controls, spaces, blank lines") {
  CHECK(repaired("a\r\nb\rc") == "a\nb\nc");
  CHECK(repaired("a\x01\x7f b\u0085c\uFEFF") == "a bc");
  CHECK(repaired("one\u00A0two\u2003three") == "one two three");
  CHECK(repaired("trailing   \t\nnext") == "trailing\nnext");
  CHECK(repaired("\n\n  lead\n\n\n\n\nend\n\n") == "  lead\n\nend");  // indentation is kept
  CHECK(repaired("tab\tinside") == "tab\tinside");
  CHECK(repaired("a  \n  \nb") == "a\n\nb");
}

TEST_CASE("repair: NFC, and each step can be turned off") {
  CHECK(repaired("e\u0301te\u0301") == "été");
  CHECK(repaired("e\u0301", {.nfc = false}) == "e\u0301");
  CHECK(repaired("cafÃ©", {.mojibake = false}) == "cafÃ©");
  CHECK(repaired("a\r\nb  ", {.whitespace = false}) == "a\nb  ");
  CHECK(repaired("a\x01", {.controls = false}) == "a\x01");
  TextRepair r;
  std::string out;
  CHECK_FALSE(r.repair("clean text.", out));
  CHECK(r.repair("dirty  \n", out));
}
