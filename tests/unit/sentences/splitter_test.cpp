// common/sentences: the rule pass over ICU's breaks, newline modes, white space, languages and
// input that is not clean text.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/sentences/abbreviations.h"
#include "common/sentences/sentence_splitter.h"

using namespace suite::sentences;
using Strings = std::vector<std::string>;

namespace {
Strings split(std::string_view text, SplitOptions options = {}) {
  SentenceSplitter splitter(options);
  return splitter.split_strings(text);
}
}  // namespace

TEST_CASE("abbreviations ICU does not know stay inside the sentence") {
  CHECK(split("Dr. Jones met St. John at No. 5 Main St. near the park.") ==
        Strings{"Dr. Jones met St. John at No. 5 Main St. near the park."});
  CHECK(split("See Fig. 3 and p. 12, e.g. the table. It is long.") ==
        Strings{"See Fig. 3 and p. 12, e.g. the table.", "It is long."});
  CHECK(split("He works for Acme Inc. The firm is small.") == Strings{"He works for Acme Inc.", "The firm is small."});
  // Plain ICU breaks after "Dr." (its list has no "Dr.").
  CHECK(split("Dr. Jones came.", {.icu_only = true}) == Strings{"Dr.", "Jones came."});
}

TEST_CASE("ICU's own abbreviation list is loaded from its data and extended") {
  const AbbreviationTable& en = AbbreviationTable::for_language("en");
  CHECK(en.icu_entries() > 100);
  CHECK(en.is_generic("Prof"));   // from ICU (CLDR)
  CHECK(en.is_generic("etc"));    // ours
  CHECK(en.is_title("Dr"));
  CHECK_FALSE(en.is_generic("Long"));  // an ordinary word in ICU's list: may end a sentence
  CHECK(AbbreviationTable::for_language("xx").icu_entries() == 0);
}

TEST_CASE("initials, exclamations and addresses") {
  CHECK(split("The paper by Phillip J. Eby is short. Read it!") ==
        Strings{"The paper by Phillip J. Eby is short.", "Read it!"});
  CHECK(split("Write to jane.Doe@example.com. She answers.") ==
        Strings{"Write to jane.Doe@example.com.", "She answers."});
  CHECK(split("Wow! that worked.") == Strings{"Wow! that worked."});
}

TEST_CASE("numbered lists need a sequence: a lone number before a period ends the sentence") {
  CHECK(split("Steps: 1) Open it 2) Close it") == Strings{"Steps:", "1) Open it", "2) Close it"});
  CHECK(split("The index starts at 0. This is normal.") == Strings{"The index starts at 0.", "This is normal."});
  CHECK(split("Call f(x, 1) Then g(y, 2) Now") == Strings{"Call f(x, 1) Then g(y, 2) Now"});
}

TEST_CASE("newlines: line mode ends a sentence at every newline, paragraph mode rejoins wrapped lines") {
  std::string text = "A heading\nThis sentence is\nwrapped. Next one.\n\nNew paragraph";
  CHECK(split(text) == Strings{"A heading", "This sentence is", "wrapped.", "Next one.", "New paragraph"});
  CHECK(split(text, {.newlines = NewlineMode::kParagraph}) ==
        Strings{"A heading\nThis sentence is\nwrapped.", "Next one.", "New paragraph"});
  // Lines of code without letters stay lines in line mode.
  CHECK(split("int f() {\n}\n") == Strings{"int f() {", "}"});
}

TEST_CASE("keep_whitespace: the sentences concatenate to the text") {
  std::string text = "  Mr. Smith came.  He left!\n\n1. The first 2. The second . . . . End.   ";
  SentenceSplitter splitter({.keep_whitespace = true});
  Strings got = splitter.split_strings(text);
  std::string joined;
  for (const std::string& s : got) joined += s;
  CHECK(joined == text);
  CHECK(got.size() == 5);
  CHECK(split(text).size() == got.size());
}

TEST_CASE("empty, blank and invalid UTF-8 input") {
  CHECK(split("").empty());
  CHECK(split(" \n\t ").empty());
  std::string bad = "Caf\xC3 ok. Next \xFF\xFE sentence.";
  SentenceSplitter splitter({});
  std::vector<Span> spans;
  splitter.split(bad, spans);
  REQUIRE(spans.size() == 2);
  CHECK(spans.back().end == bad.size());
}

TEST_CASE("languages: per document, with ICU's list and period ordinals") {
  SentenceSplitter splitter({.lang = "en"});
  CHECK(splitter.split_strings("Das ist z. B. gut. Er kam am 3. Mai. Dann ging er.", "de") ==
        Strings{"Das ist z. B. gut.", "Er kam am 3. Mai.", "Dann ging er."});
  CHECK(splitter.split_strings("第一句。第二句！第三句？", "zh") == Strings{"第一句。", "第二句！", "第三句？"});
  CHECK(splitter.split_strings("Il est né le 3 mai. Il est parti.", "fr") == Strings{"Il est né le 3 mai.", "Il est parti."});
}

TEST_CASE("normalize_language") {
  CHECK(normalize_language("en") == "en");
  CHECK(normalize_language("en-US") == "en");
  CHECK(normalize_language("pt_BR") == "pt");
  CHECK(normalize_language("__label__de") == "de");
  CHECK(normalize_language("un") == "");
  CHECK(normalize_language("") == "");
  CHECK(normalize_language("e") == "");
  CHECK(normalize_language("english") == "");
}

TEST_CASE("random texts of tricky pieces: spans are ordered, trimmed, non-empty, and tile with keep_whitespace") {
  const char* pieces[] = {"Mr.", " ", "  ", "\n", "\n\n", "a.", "B.", "1.", "2.)", "3)", ". . .", "...", "....",
                          "U.S.", "e.g.", "!", "?", "\"", "”", "(", ")", "[...]", "•", "word", "Word", "x",
                          "\xff", "\xc3", "é", "。", "No.", "5", "\t", "Co.", "I."};
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  SentenceSplitter trimmed({});
  SentenceSplitter tiled({.keep_whitespace = true});
  SentenceSplitter paragraph({.newlines = NewlineMode::kParagraph});
  std::vector<Span> spans;
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    for (uint32_t n = next() % 40; n > 0; --n) text += pieces[next() % std::size(pieces)];
    for (SentenceSplitter* s : {&trimmed, &paragraph}) {
      s->split(text, spans);
      uint32_t last = 0;
      for (const Span& sp : spans) {
        REQUIRE(sp.begin >= last);
        REQUIRE(sp.begin < sp.end);
        REQUIRE(sp.end <= text.size());
        CHECK(text[sp.begin] != ' ');
        CHECK(text[sp.end - 1] != ' ');
        last = sp.end;
      }
    }
    tiled.split(text, spans);
    uint32_t pos = 0;
    for (const Span& sp : spans) {
      REQUIRE(sp.begin == pos);
      REQUIRE(sp.end > sp.begin);
      pos = sp.end;
    }
    REQUIRE(pos == text.size());
  }
}
