#include "common/filter/language_id.h"

#include <cld2/public/compact_lang_det.h>

#include <algorithm>

namespace suite::filter {

LanguageGuess identify_language(std::string_view text) {
  CLD2::Language language3[3];
  int percent3[3];
  double normalized_score3[3];
  int text_bytes = 0;
  bool reliable = false;
  int valid_prefix = 0;
  CLD2::Language top = CLD2::ExtDetectLanguageSummaryCheckUTF8(
      text.data(), int(std::min<size_t>(text.size(), size_t(1) << 30)), true, nullptr, 0, language3, percent3,
      normalized_score3, nullptr, &text_bytes, &reliable, &valid_prefix);
  LanguageGuess g;
  g.reliable = reliable;
  if (top == CLD2::UNKNOWN_LANGUAGE) return g;
  g.code = CLD2::LanguageCode(top);
  // zh-Hant and zh are both Chinese; keep the ISO 639-1 part for codes like "zh-Hant".
  if (size_t dash = g.code.find('-'); dash != std::string::npos) g.code.resize(dash);
  g.score = language3[0] == top ? percent3[0] / 100.0 : 0.0;
  return g;
}

const char* language_rule(const LanguageGuess& g, const LanguageConfig& c) {
  if (c.keep.empty()) return nullptr;
  if (std::find(c.keep.begin(), c.keep.end(), g.code) == c.keep.end()) return "lang_not_allowed";
  if (g.score < c.threshold) return "lang_low_score";
  return nullptr;
}

}  // namespace suite::filter
