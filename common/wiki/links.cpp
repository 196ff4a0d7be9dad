#include "common/wiki/links.h"

#include <algorithm>
#include <iterator>
#include <cstring>

namespace suite::wiki {
namespace {

constexpr int kMaxDepth = 16;

// Namespace prefixes whose links are not prose (English and the largest wikis' local names), lowercase.
// Cyrillic and CJK names are listed as written (first letter capitalised where the script has case).
constexpr std::string_view kDroppedNamespaces[] = {
    "archivo", "arquivo", "bestand", "bild", "catégorie", "categoria", "categoría", "categorie", "category",
    "datei", "fichier", "ficheiro", "file", "image", "imagen", "immagine", "kategori", "kategoria", "kategorie",
    "kategória", "media", "plik", "soubor", "файл", "Файл", "категория", "Категория", "分类", "文件",
    "ファイル", "カテゴリ"};

constexpr std::string_view kUrlSchemes[] = {"//",      "ftp://",  "ftps://", "git://",  "gopher://",
                                                          "http://", "https://", "irc://", "ircs://", "mailto:",
                                                          "news:",   "sftp://"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::string lowercase_ascii(std::string_view s) {
  std::string r(s);
  for (char& c : r)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return r;
}

// "de", "zh-yue", "simple", "be-tarask": the shape of an interlanguage prefix.
bool is_language_code(std::string_view p) {
  if (p == "simple") return true;
  if (p.size() < 2) return false;
  size_t i = 0;
  while (i < p.size() && p[i] >= 'a' && p[i] <= 'z') ++i;
  if (i < 2 || i > 3) return false;
  while (i < p.size()) {
    if (p[i] != '-') return false;
    size_t j = ++i;
    while (i < p.size() && p[i] >= 'a' && p[i] <= 'z') ++i;
    if (i == j) return false;
  }
  return true;
}

bool is_dropped_namespace(std::string_view prefix) {
  std::string p = lowercase_ascii(trim(prefix));
  return std::find(std::begin(kDroppedNamespaces), std::end(kDroppedNamespaces), p) != std::end(kDroppedNamespaces);
}

// Length of the URL scheme at the start of s (case-insensitive), or 0.
size_t url_scheme(std::string_view s) {
  for (std::string_view scheme : kUrlSchemes) {
    if (s.size() < scheme.size()) continue;
    bool same = true;
    for (size_t k = 0; k < scheme.size() && same; ++k) {
      char c = s[k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
      same = c == scheme[k];
    }
    if (same) return scheme.size();
  }
  return 0;
}

}  // namespace

void LinkReducer::reduce(std::string_view in, std::string& out) {
  in_ = in;
  stack_.clear();
  pairs_.clear();
  // Match "[[" with "]]" once, so that unbalanced brackets cost linear time.
  const char* p = in.data();
  for (size_t i = 0; i + 1 < in.size();) {
    while (i + 1 < in.size() && p[i] != '[' && p[i] != ']') ++i;
    if (i + 1 >= in.size()) break;
    if (p[i] == '[' && p[i + 1] == '[') {
      stack_.push_back(i);
      i += 2;
    } else if (p[i] == ']' && p[i + 1] == ']' && !stack_.empty()) {
      pairs_.emplace_back(stack_.back(), i);
      stack_.pop_back();
      i += 2;
    } else {
      ++i;
    }
  }
  std::sort(pairs_.begin(), pairs_.end());
  out.reserve(out.size() + in.size());
  reduce_range(0, in.size(), out, 0);
}

void LinkReducer::reduce_range(size_t begin, size_t end, std::string& out, int depth) {
  std::string_view in = in_;
  size_t pos = begin;
  while (pos < end) {
    const void* hit = std::memchr(in.data() + pos, '[', end - pos);
    size_t open = hit ? static_cast<size_t>(static_cast<const char*>(hit) - in.data()) : end;
    out.append(in.data() + pos, open - pos);
    if (open == end) return;
    if (open + 1 < end && in[open + 1] == '[') {
      auto it = std::lower_bound(pairs_.begin(), pairs_.end(), std::make_pair(open, size_t{0}));
      if (it != pairs_.end() && it->first == open && it->second + 2 <= end) {
        internal_link(open, it->second, out, depth);
        pos = it->second + 2;
        continue;
      }
      out += "[[";
      pos = open + 2;
      continue;
    }
    // External link: "[" URL [space label] "]" on one line.
    size_t scheme = url_scheme(in.substr(open + 1, std::min<size_t>(end - open - 1, 10)));
    if (scheme > 0) {
      size_t close = open + 1;
      while (close < end && in[close] != ']' && in[close] != '\n') ++close;
      if (close < end && in[close] == ']') {
        std::string_view body = in.substr(open + 1, close - open - 1);
        size_t space = body.find_first_of(" \t");
        if (space != std::string_view::npos) out += trim(body.substr(space + 1));
        pos = close + 1;
        continue;
      }
    }
    out += '[';
    pos = open + 1;
  }
}

void LinkReducer::internal_link(size_t open, size_t close, std::string& out, int depth) {
  std::string_view body = in_.substr(open + 2, close - open - 2);
  size_t pipe = body.find('|');
  std::string_view target = trim(body.substr(0, pipe));
  bool leading_colon = !target.empty() && target.front() == ':';
  if (leading_colon) target = trim(target.substr(1));
  size_t colon = target.find(':');
  if (!leading_colon && colon != std::string_view::npos) {
    std::string_view prefix = target.substr(0, colon);
    if (is_dropped_namespace(prefix) || is_language_code(prefix)) return;
  }
  if (pipe == std::string_view::npos) {
    out += target;
    return;
  }
  size_t label_begin = open + 2 + pipe + 1;
  if (trim(in_.substr(label_begin, close - label_begin)).empty()) {
    // Pipe trick: [[Namespace:Title (qualifier)|]] shows "Title".
    std::string_view shown = colon == std::string_view::npos ? target : trim(target.substr(colon + 1));
    size_t paren = shown.find(" (");
    if (paren != std::string_view::npos && shown.back() == ')') shown = shown.substr(0, paren);
    out += shown;
    return;
  }
  if (depth >= kMaxDepth) {
    out.append(in_.data() + label_begin, close - label_begin);
    return;
  }
  // Trim the label's outer whitespace, keeping inner links intact.
  while (label_begin < close && (in_[label_begin] == ' ' || in_[label_begin] == '\t')) ++label_begin;
  size_t label_end = close;
  while (label_end > label_begin && (in_[label_end - 1] == ' ' || in_[label_end - 1] == '\t')) --label_end;
  reduce_range(label_begin, label_end, out, depth + 1);
}

}  // namespace suite::wiki
