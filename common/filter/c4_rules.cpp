#include <algorithm>
#include <array>

#include "common/filter/quality_rules.h"

namespace suite::filter {
namespace {

bool contains_ci(std::string_view hay, std::string_view needle) {  // needle is lowercase ASCII
  if (hay.size() < needle.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() && (hay[i + j] >= 'A' && hay[i + j] <= 'Z' ? char(hay[i + j] + 32) : hay[i + j]) == needle[j])
      ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

// Removes "[12]", "[]", "[edit]" and "[citation needed]" (case-insensitive) into `out`.
void remove_citations(std::string_view line, std::string& out) {
  out.clear();
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == '[') {
      size_t j = i + 1;
      while (j < line.size() && line[j] >= '0' && line[j] <= '9') ++j;
      if (j < line.size() && line[j] == ']') {
        i = j + 1;
        continue;
      }
      std::string_view rest = line.substr(i);
      bool cut = false;
      for (std::string_view mark : {std::string_view("[edit]"), std::string_view("[citation needed]")})
        if (rest.size() >= mark.size() && contains_ci(rest.substr(0, mark.size()), mark)) {
          i += mark.size();
          cut = true;
          break;
        }
      if (cut) continue;
    }
    out += line[i++];
  }
}

// Sentences in a line: terminal marks followed by a space or the end, at least one per line.
size_t count_sentences(std::string_view line) {
  size_t n = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if ((c == '.' || c == '!' || c == '?') && (i + 1 == line.size() || line[i + 1] == ' ')) {
      while (i + 1 < line.size() && line[i + 1] == ' ') ++i;
      if (i + 1 < line.size()) ++n;  // a sentence ends here and another starts
    }
  }
  return n + 1;
}

constexpr std::array<std::string_view, 6> kPolicy = {"terms of use",  "privacy policy", "cookie policy",
                                                      "uses cookies", "use of cookies", "use cookies"};

}  // namespace

const char* c4_quality(DocText& doc, const C4Config& c, std::string& kept) {
  kept.clear();
  std::string cleaned;
  size_t sentences = 0;
  for (std::string_view raw : doc.lines()) {
    std::string_view line = strip(raw);
    if (line.empty()) continue;
    if (c.max_word_length >= 0) {
      bool too_long = false;
      size_t i = 0;
      while (i < line.size() && !too_long) {
        while (i < line.size() && is_ascii_space(static_cast<unsigned char>(line[i]))) ++i;
        size_t s = i;
        while (i < line.size() && !is_ascii_space(static_cast<unsigned char>(line[i]))) ++i;
        too_long = long(count_code_points(line.substr(s, i - s))) > c.max_word_length;
      }
      if (too_long) continue;
    }
    if (c.citations && line.find('[') != std::string_view::npos) {
      remove_citations(line, cleaned);
      line = cleaned;
    }
    if (c.terminal_punct) {
      bool ends = !line.empty() && (line.back() == '.' || line.back() == '?' || line.back() == '!' ||
                                    line.back() == '"' || line.back() == '\'');
      if (!ends || line.ends_with("...")) continue;
    }
    if (c.min_words_per_line > 0) {
      long words = 0;
      bool in_word = false;
      for (char ch : line) {
        bool space = is_ascii_space(static_cast<unsigned char>(ch));
        words += !space && !in_word;
        in_word = !space;
      }
      if (words < c.min_words_per_line) continue;
    }
    if (c.lorem_ipsum && contains_ci(line, "lorem ipsum")) return "c4_lorem_ipsum";
    if (c.javascript && contains_ci(line, "javascript")) continue;
    if (c.curly_bracket && line.find('{') != std::string_view::npos) return "c4_curly_bracket";
    if (c.policy && std::any_of(kPolicy.begin(), kPolicy.end(), [&](std::string_view p) { return contains_ci(line, p); }))
      continue;
    sentences += count_sentences(line);
    if (!kept.empty()) kept += '\n';
    kept.append(line);
  }
  if (c.min_sentences > 0 && long(sentences) < c.min_sentences) return "c4_too_few_sentences";
  return nullptr;
}

}  // namespace suite::filter
