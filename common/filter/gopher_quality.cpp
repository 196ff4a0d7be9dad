#include <array>
#include <string_view>

#include "common/filter/quality_rules.h"

namespace suite::filter {

const char* gopher_quality(DocText& doc, const GopherQualityConfig& c) {
  const auto& tokens = doc.tokens();
  const auto& words = doc.words();
  const double n_words = double(words.size());
  if (c.min_words >= 0 && long(words.size()) < c.min_words) return "gopher_short_doc";
  if (c.max_words >= 0 && long(words.size()) > c.max_words) return "gopher_long_doc";
  size_t total_len = 0;
  for (std::string_view w : words) total_len += count_code_points(w);
  double avg = n_words > 0 ? double(total_len) / n_words : 0;
  if (c.min_avg_word_length >= 0 && avg < c.min_avg_word_length) return "gopher_below_avg_word_length";
  if (c.max_avg_word_length >= 0 && avg > c.max_avg_word_length) return "gopher_above_avg_word_length";
  const double n_tokens = tokens.empty() ? 1.0 : double(tokens.size());
  std::string_view text = doc.text();
  if (c.max_symbol_word_ratio >= 0) {
    if (double(count_substr(text, "#")) / n_tokens > c.max_symbol_word_ratio) return "gopher_hash_ratio";
    if (double(count_substr(text, "...") + count_substr(text, "\u2026")) / n_tokens > c.max_symbol_word_ratio)
      return "gopher_ellipsis_ratio";
  }
  const auto& lines = doc.lines();
  if (!lines.empty()) {
    size_t bullets = 0, ellipsis = 0;
    for (std::string_view line : lines) {
      std::string_view s = strip(line);
      if (s.starts_with("\u2022") || s.starts_with("-")) ++bullets;
      if (s.ends_with("...") || s.ends_with("\u2026")) ++ellipsis;
    }
    if (c.max_bullet_lines_ratio >= 0 && double(bullets) / double(lines.size()) > c.max_bullet_lines_ratio)
      return "gopher_bullet_lines";
    if (c.max_ellipsis_lines_ratio >= 0 && double(ellipsis) / double(lines.size()) > c.max_ellipsis_lines_ratio)
      return "gopher_ellipsis_lines";
  }
  if (c.min_alpha_words_ratio >= 0) {
    size_t alpha = 0;
    for (std::string_view t : tokens) alpha += has_letter(t);
    if (double(alpha) / n_tokens < c.min_alpha_words_ratio) return "gopher_alpha_words";
  }
  if (c.min_stop_words > 0) {
    static constexpr std::array<std::string_view, 8> kStop = {"the", "be", "to", "of", "and", "that", "have", "with"};
    unsigned seen = 0;
    for (std::string_view w : words) {
      if (w.size() > 4) continue;
      for (size_t k = 0; k < kStop.size(); ++k)
        if (w == kStop[k]) seen |= 1u << k;
    }
    if (__builtin_popcount(seen) < c.min_stop_words) return "gopher_stop_words";
  }
  return nullptr;
}

}  // namespace suite::filter
