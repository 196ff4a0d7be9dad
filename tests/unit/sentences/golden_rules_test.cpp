// The English Golden Rules (48 cases, as pySBD benchmarks them): sentence-split must score >= 42;
// plain ICU (the --icu-only mode) is printed for comparison.
#include <doctest/doctest.h>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "common/sentences/sentence_splitter.h"

using namespace suite::sentences;

namespace {

struct GoldenCase {
  std::string text;
  std::vector<std::string> expected;
};

// tests/data/sentences/english_golden_rules.txt: "> text", then "= sentence" lines.
std::vector<GoldenCase> load_golden_rules() {
  std::ifstream in("tests/data/sentences/english_golden_rules.txt");
  REQUIRE(in.good());
  std::vector<GoldenCase> cases;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("> ")) cases.push_back({line.substr(2), {}});
    else if (line.starts_with("= ")) cases.back().expected.push_back(line.substr(2));
  }
  return cases;
}

int score(SentenceSplitter& splitter, const std::vector<GoldenCase>& cases, bool print_failures) {
  int passed = 0;
  for (const GoldenCase& c : cases) {
    std::vector<std::string> got = splitter.split_strings(c.text);
    if (got == c.expected) {
      ++passed;
    } else if (print_failures) {
      std::cout << "  golden rule failed: " << c.text << "\n";
      for (const std::string& s : got) std::cout << "    | " << s << "\n";
    }
  }
  return passed;
}

}  // namespace

TEST_CASE("sentence-split scores >= 42 of the 48 English Golden Rules (ICU alone about 29)") {
  std::vector<GoldenCase> cases = load_golden_rules();
  REQUIRE(cases.size() == 48);
  SentenceSplitter rules({.lang = "en"});
  SentenceSplitter icu({.lang = "en", .icu_only = true});
  int with_rules = score(rules, cases, true);
  int icu_only = score(icu, cases, false);
  std::cout << "English Golden Rules: sentence-split " << with_rules << "/48, ICU only (ss=standard) " << icu_only
            << "/48\n";
  CHECK(with_rules >= 42);
  CHECK(with_rules > icu_only);
}
