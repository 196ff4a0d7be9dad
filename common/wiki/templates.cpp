#include "common/wiki/templates.h"

#include <algorithm>

namespace suite::wiki {
namespace {
constexpr int kTemplate = 0, kParameter = 1, kTable = 2;

// True when only spaces, tabs or ':' (an indented table) precede position i on its line.
bool at_line_start(std::string_view in, size_t i) {
  while (i > 0) {
    char c = in[--i];
    if (c == '\n') return true;
    if (c != ' ' && c != '\t' && c != ':') return false;
  }
  return true;
}
}  // namespace

void TemplateRemover::remove(std::string_view in, std::string& out) {
  stack_.clear();
  ranges_.clear();
  const size_t n = in.size();
  const char* p = in.data();
  size_t i = 0;
  while (i < n) {
    // Only braces matter; '|' is looked at from the '}' of "|}".
    while (i < n && p[i] != '{' && p[i] != '}') ++i;
    if (i == n) break;
    char next = i + 1 < n ? p[i + 1] : '\0';
    if (p[i] == '{') {
      if (next == '{') {
        bool param = i + 2 < n && p[i + 2] == '{';
        stack_.push_back({param ? kParameter : kTemplate, i});
        i += param ? 3 : 2;
      } else if (next == '|' && at_line_start(in, i)) {
        stack_.push_back({kTable, i});
        i += 2;
      } else {
        ++i;
      }
      continue;
    }
    if (!stack_.empty() && stack_.back().kind == kTable) {
      if (i > 0 && p[i - 1] == '|' && at_line_start(in, i - 1)) {
        ranges_.emplace_back(stack_.back().start, i + 1);
        stack_.pop_back();
      }
      ++i;
    } else if (next == '}' && !stack_.empty()) {
      // "{{{p}}}" closes with three braces; a parameter closed by two is forgiven.
      size_t len = stack_.back().kind == kParameter && i + 2 < n && p[i + 2] == '}' ? 3 : 2;
      ranges_.emplace_back(stack_.back().start, i + len);
      stack_.pop_back();
      i += len;
    } else {
      ++i;
    }
  }
  // Ranges are nested or disjoint; keep what lies outside their union.
  std::sort(ranges_.begin(), ranges_.end());
  out.reserve(out.size() + n);
  size_t pos = 0;
  for (auto [b, e] : ranges_) {
    if (e <= pos) continue;
    if (b > pos) out.append(in.data() + pos, b - pos);
    pos = e;
  }
  out.append(in.data() + pos, n - pos);
}

}  // namespace suite::wiki
