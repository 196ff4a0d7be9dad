#include "common/wiki/lines.h"

#include <cstring>

namespace suite::wiki {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_upper_word(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(c >= 'A' && c <= 'Z') && c != '_') return false;
  return true;
}

// Length of "__WORD__" at s (a behaviour switch), or 0.
size_t magic_word(std::string_view s) {
  if (s.size() < 5 || s[0] != '_' || s[1] != '_') return 0;
  size_t end = s.find("__", 2);
  if (end == std::string_view::npos || end == 2 || end > 40) return 0;
  std::string_view word = s.substr(2, end - 2);
  if (!is_upper_word(word) || word.front() == '_' || word.back() == '_') return 0;
  return end + 2;
}

// True when s (the text between '(' and ')') holds only spaces and separators.
bool only_separators(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == ' ' || c == ',' || c == ';' || c == ':' || c == '-') continue;
    // en dash E2 80 93, em dash E2 80 94
    if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0x93 || static_cast<unsigned char>(s[i + 2]) == 0x94)) {
      i += 2;
      continue;
    }
    return false;
  }
  return true;
}

// Inline clean-up of one trimmed line: quotes, switches, spaces, empty parentheses.
void inline_markup(std::string_view line, std::string& scratch, std::string& out) {
  scratch.clear();
  strip_quotes_markup(line, scratch);
  size_t start = out.size();
  bool space = false;
  const size_t n = scratch.size();
  for (size_t i = 0; i < n;) {
    // Copy a run of ordinary characters at once.
    size_t j = i;
    while (j < n && !is_space(scratch[j]) && scratch[j] != '_' && scratch[j] != '(') ++j;
    if (j > i) {
      if (space && out.size() > start) out += ' ';
      space = false;
      out.append(scratch, i, j - i);
      i = j;
      continue;
    }
    char c = scratch[i];
    if (is_space(c)) {
      space = true;
      ++i;
      continue;
    }
    if (c == '_') {
      if (size_t m = magic_word(std::string_view(scratch).substr(i))) {
        i += m;
        continue;
      }
    } else {  // '('
      size_t close = scratch.find(')', i + 1);
      if (close != std::string::npos && close - i <= 24 &&
          only_separators(std::string_view(scratch).substr(i + 1, close - i - 1))) {
        i = close + 1;
        continue;
      }
      // "({{IPA|..}}; born 1879)" -> "(born 1879)": separators left first in a parenthesis go.
      if (space && out.size() > start) out += ' ';
      space = false;
      out += '(';
      ++i;
      while (i < n && (scratch[i] == ';' || scratch[i] == ',' || is_space(scratch[i]))) ++i;
      continue;
    }
    if (space && out.size() > start) out += ' ';
    space = false;
    out += c;
    ++i;
  }
}

}  // namespace

void strip_quotes_markup(std::string_view line, std::string& out) {
  size_t pos = 0;
  while (pos < line.size()) {
    const void* hit = std::memchr(line.data() + pos, '\'', line.size() - pos);
    size_t q = hit ? static_cast<size_t>(static_cast<const char*>(hit) - line.data()) : line.size();
    out.append(line.data() + pos, q - pos);
    if (q == line.size()) break;
    size_t n = 1;
    while (q + n < line.size() && line[q + n] == '\'') ++n;
    if (n == 1) out += '\'';
    else if (n == 4) out += '\'';
    else if (n > 5) out.append(n - 5, '\'');
    pos = q + n;
  }
}

void format_lines(std::string_view in, std::string& out) {
  std::string scratch, line_text, heading;
  const size_t begin = out.size();
  bool blank = false;          // an empty line since the last emitted one
  bool heading_blank = false;  // the same, as it was before the pending heading
  auto emit = [&](std::string_view text, bool blank_before) {
    if (out.size() > begin) out += blank_before ? "\n\n" : "\n";
    out += text;
  };
  size_t pos = 0;
  while (pos <= in.size()) {
    size_t nl = in.find('\n', pos);
    if (nl == std::string_view::npos) nl = in.size();
    std::string_view line = trim(in.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.find_first_not_of('-') == std::string_view::npos && line.size() >= 4) line = {};  // ----
    bool is_heading = line.size() >= 2 && line.front() == '=' && line.back() == '=';
    if (is_heading) {
      size_t l = line.find_first_not_of('='), r = line.find_last_not_of('=');
      line = l == std::string_view::npos || l > r ? std::string_view() : trim(line.substr(l, r - l + 1));
    }
    while (!line.empty() && (line.front() == '*' || line.front() == '#' || line.front() == ':' || line.front() == ';'))
      line = trim(line.substr(1));
    line_text.clear();
    inline_markup(line, scratch, line_text);
    if (line_text.empty()) {
      blank = out.size() > begin || !heading.empty();
    } else if (is_heading) {
      // Held back until its section turns out to have text: headings of empty sections go.
      heading = line_text;
      heading_blank = blank;
      blank = false;
    } else {
      if (!heading.empty()) {
        emit(heading, heading_blank);
        heading.clear();
      }
      emit(line_text, blank);
      blank = false;
    }
  }
}

}  // namespace suite::wiki
