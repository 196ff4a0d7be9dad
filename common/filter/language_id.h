// Language identification with CLD2 (Chrome's compact language detector, libcld2): the top
// language's ISO code ("en", "de", "zh", ...; "un" when unknown) and its score, the share of the
// text's letters CLD2 assigns to it (0..1).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace suite::filter {

struct LanguageGuess {
  std::string code = "un";
  double score = 0;
  bool reliable = false;
};

LanguageGuess identify_language(std::string_view utf8_text);

struct LanguageConfig {
  std::vector<std::string> keep;  // empty: identify and record only
  double threshold = 0.5;
};

// "lang_not_allowed" / "lang_low_score" or nullptr.
const char* language_rule(const LanguageGuess& g, const LanguageConfig& c);

}  // namespace suite::filter
