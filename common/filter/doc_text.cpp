#include "common/filter/doc_text.h"

#include "common/unicode/char_class.h"
#include "common/unicode/utf8.h"

namespace suite::filter {

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

size_t count_substr(std::string_view s, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = s.find(needle); pos != std::string_view::npos; pos = s.find(needle, pos + needle.size())) ++n;
  return n;
}

bool has_letter(std::string_view word) {
  const auto* p = reinterpret_cast<const unsigned char*>(word.data());
  for (size_t i = 0; i < word.size();) {
    unsigned char c = p[i];
    if (c < 0x80) {
      if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
      ++i;
      continue;
    }
    char32_t cp;
    i += unicode::utf8_decode(p + i, word.size() - i, cp);
    if (unicode::char_class(cp) == unicode::CharClass::kLetter) return true;
  }
  return false;
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && is_ascii_space(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

void DocText::reset(std::string_view text) {
  text_ = text;
  chars_ = SIZE_MAX;
  tokens_ready_ = lines_ready_ = false;
}

size_t DocText::chars() {
  if (chars_ == SIZE_MAX) chars_ = count_code_points(text_);
  return chars_;
}

const std::vector<std::string_view>& DocText::tokens() {
  if (tokens_ready_) return tokens_;
  tokens_.clear();
  words_.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(text_.data());
  const size_t n = text_.size();
  size_t i = 0;
  while (i < n) {
    while (i < n && is_ascii_space(p[i])) ++i;
    size_t start = i;
    while (i < n && !is_ascii_space(p[i])) ++i;
    if (i == start) break;
    tokens_.emplace_back(text_.data() + start, i - start);
    size_t a = start, b = i;
    while (a < b && is_ascii_punct(p[a])) ++a;
    while (b > a && is_ascii_punct(p[b - 1])) --b;
    if (b > a) words_.emplace_back(text_.data() + a, b - a);
  }
  tokens_ready_ = true;
  return tokens_;
}

const std::vector<std::string_view>& DocText::words() {
  tokens();
  return words_;
}

const std::vector<std::string_view>& DocText::lines() {
  if (lines_ready_) return lines_;
  lines_.clear();
  size_t pos = 0;
  while (true) {
    size_t nl = text_.find('\n', pos);
    if (nl == std::string_view::npos) {
      lines_.push_back(text_.substr(pos));
      break;
    }
    lines_.push_back(text_.substr(pos, nl - pos));
    pos = nl + 1;
  }
  lines_ready_ = true;
  return lines_;
}

}  // namespace suite::filter
