#include "common/wiki/html_tags.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace suite::wiki {
namespace {

enum class TagKind { kText, kDropWithContent, kInline, kBlock };

// Lowercase names, sorted within each list (binary search).
constexpr std::array<std::string_view, 24> kDropWithContent = {
    "categorytree", "ce",      "charinsert", "chem",     "gallery",         "graph",   "hiero",    "imagemap",
    "includeonly",  "indicator", "inputbox", "mapframe", "maplink",         "math",    "noinclude", "ref",
    "references",   "score",   "source",     "syntaxhighlight", "table",    "templatedata", "templatestyles",
    "timeline"};
constexpr std::array<std::string_view, 37> kInline = {
    "abbr", "b",    "bdi",  "bdo",    "big",  "cite",  "code", "data", "del",     "dfn",  "em",   "font",
    "i",    "ins",  "kbd",  "mark",   "nowiki", "onlyinclude", "q", "rb",     "rp",      "rt",   "ruby", "s",
    "samp", "section", "small", "span", "strike", "strong", "sub", "sup",  "time",    "tt",   "u",    "var",  "wbr"};
constexpr std::array<std::string_view, 20> kBlock = {
    "blockquote", "br", "center", "dd", "div", "dl", "dt", "h1", "h2", "h3", "h4",
    "h5",         "h6", "hr",     "li", "ol",  "p",  "poem", "pre", "ul"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& list, std::string_view name) {
  return std::binary_search(list.begin(), list.end(), name);
}

TagKind classify(std::string_view name) {
  if (contains(kDropWithContent, name)) return TagKind::kDropWithContent;
  if (contains(kInline, name)) return TagKind::kInline;
  if (contains(kBlock, name)) return TagKind::kBlock;
  return TagKind::kText;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Position just after the closing tag `</name ...>` at or after `from`, or npos.
size_t find_closing(std::string_view in, size_t from, std::string_view name) {
  while (from < in.size()) {
    const void* hit = std::memchr(in.data() + from, '<', in.size() - from);
    if (!hit) return std::string_view::npos;
    size_t lt = static_cast<size_t>(static_cast<const char*>(hit) - in.data());
    size_t i = lt + 1;
    if (i < in.size() && in[i] == '/') {
      ++i;
      size_t k = 0;
      while (k < name.size() && i + k < in.size() && lower(in[i + k]) == name[k]) ++k;
      if (k == name.size() && (i + k == in.size() || !is_name_char(in[i + k]))) {
        size_t gt = in.find('>', i + k);
        return gt == std::string_view::npos ? in.size() : gt + 1;
      }
    }
    from = lt + 1;
  }
  return std::string_view::npos;
}

}  // namespace

void strip_comments_and_tags(std::string_view in, std::string& out) {
  out.reserve(out.size() + in.size());
  size_t pos = 0;
  char name_buf[16];
  while (pos < in.size()) {
    const void* hit = std::memchr(in.data() + pos, '<', in.size() - pos);
    size_t lt = hit ? static_cast<size_t>(static_cast<const char*>(hit) - in.data()) : in.size();
    out.append(in.data() + pos, lt - pos);
    if (lt == in.size()) break;
    pos = lt + 1;
    if (in.compare(lt, 4, "<!--") == 0) {
      size_t end = in.find("-->", lt + 4);
      pos = end == std::string_view::npos ? in.size() : end + 3;  // an unclosed comment hides the rest
      continue;
    }
    size_t i = lt + 1;
    bool closing = i < in.size() && in[i] == '/';
    if (closing) ++i;
    size_t n = 0;
    while (i + n < in.size() && is_name_char(in[i + n]) && n < sizeof name_buf) {
      name_buf[n] = lower(in[i + n]);
      ++n;
    }
    TagKind kind = n == 0 || n == sizeof name_buf || (name_buf[0] >= '0' && name_buf[0] <= '9') ? TagKind::kText
                                                                      : classify(std::string_view(name_buf, n));
    // The tag must end with '>' before any other '<'.
    size_t gt = kind == TagKind::kText ? std::string_view::npos : in.find_first_of("<>", i + n);
    if (gt == std::string_view::npos || in[gt] != '>') kind = TagKind::kText;
    if (kind == TagKind::kText) {
      out += '<';
      continue;
    }
    bool self_closing = in[gt - 1] == '/';
    pos = gt + 1;
    if (kind == TagKind::kDropWithContent) {
      if (!closing && !self_closing) {
        size_t end = find_closing(in, pos, std::string_view(name_buf, n));
        if (end != std::string_view::npos) pos = end;
      }
    } else if (kind == TagKind::kBlock) {
      out += '\n';
    }
  }
}

}  // namespace suite::wiki
