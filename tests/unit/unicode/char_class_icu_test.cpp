// The generated Unicode 16.0 class tables against ICU, for every code point.
//
// Known, expected differences: ICU is built on its own Unicode version (ICU 72 = Unicode 15.0
// here). Code points that are letters/numbers in 16.0 but unassigned in ICU's older version
// (Unicode 15.1/16.0 additions: CJK Ext. I, Garay, Kirat Rai, Ol Onal, Todhri,
// Tulu-Tigalari, ...) differ; with an ICU newer than 16.0 the differences are its additions.
// Any other difference (a category change, a White_Space change) fails the test.
#include <doctest/doctest.h>
#include <unicode/uchar.h>
#include <unicode/uversion.h>

#include <ios>
#include <cstring>

#include "common/unicode/char_class.h"

using suite::unicode::CharClass;
using suite::unicode::char_class;

namespace {
CharClass icu_class(UChar32 c) {
  if (u_hasBinaryProperty(c, UCHAR_WHITE_SPACE)) return CharClass::kSpace;
  switch (u_charType(c)) {
    case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER: case U_OTHER_LETTER:
      return CharClass::kLetter;
    case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER:
      return CharClass::kNumber;
    default:
      return CharClass::kOther;
  }
}
// Compares ICU's major.minor with 16.0.
int cmp_version_16(const UVersionInfo v) { return v[0] != 16 ? (v[0] < 16 ? -1 : 1) : (v[1] > 0 ? 1 : 0); }
}  // namespace

TEST_CASE("char class tables equal ICU on every code point except newer/older Unicode additions") {
  UVersionInfo icu_unicode;
  u_getUnicodeVersion(icu_unicode);
  const int icu_vs_16 = cmp_version_16(icu_unicode);
  size_t newer_in_ours = 0, newer_in_icu = 0, unexplained = 0;
  for (UChar32 c = 0; c <= 0x10FFFF; ++c) {
    CharClass ours = char_class(static_cast<char32_t>(c)), icu = icu_class(c);
    if (ours == icu) continue;
    UVersionInfo age;
    u_charAge(c, age);
    bool unassigned_in_icu = u_charType(c) == U_UNASSIGNED;
    if (icu_vs_16 < 0 && unassigned_in_icu && ours != CharClass::kSpace) {
      ++newer_in_ours;
    } else if (icu_vs_16 > 0 && ours == CharClass::kOther && cmp_version_16(age) > 0) {
      ++newer_in_icu;
    } else {
      if (++unexplained <= 10) FAIL_CHECK("U+" << std::hex << c << " ours " << int(ours) << " icu " << int(icu));
    }
  }
  CHECK(unexplained == 0);
  MESSAGE("ICU Unicode " << int(icu_unicode[0]) << "." << int(icu_unicode[1]) << ": " << newer_in_ours
                         << " code points are L/N only in our 16.0 tables, " << newer_in_icu
                         << " only in ICU's newer tables");
  // The spec's examples of 15.0-16.0 letters (all letters in HF 0.23 and tiktoken-rs).
  CHECK(char_class(0x11F04) == CharClass::kLetter);  // Kawi (15.0)
  CHECK(char_class(0x1E4D0) == CharClass::kLetter);  // Nag Mundari (15.0)
  CHECK(char_class(0x2EBF0) == CharClass::kLetter);  // CJK Ext. I (15.1)
  CHECK(char_class(0x10D50) == CharClass::kLetter);  // Garay (16.0)
  // Unicode 17.0 additions are "other" (as in HF and tiktoken-rs; python `regex` 2026 differs).
  CHECK(char_class(0x323B0) == CharClass::kOther);  // CJK Ext. J
  CHECK(char_class(0x10940) == CharClass::kOther);  // Sidetic
}

TEST_CASE("White_Space is exactly the 25 code points of spec §1.2") {
  const char32_t ws[] = {0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
                         0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
  size_t count = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c)
    if (char_class(c) == CharClass::kSpace) ++count;
  CHECK(count == 25);
  for (char32_t c : ws) CHECK(char_class(c) == CharClass::kSpace);
  for (char32_t c : {0x1C, 0x1D, 0x1E, 0x1F, 0x200B, 0x180E, 0xFEFF})
    CHECK(char_class(static_cast<char32_t>(c)) == CharClass::kOther);
  CHECK(char_class(0x110000) == CharClass::kOther);
}
