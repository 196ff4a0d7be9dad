#include "common/wiki/templates.h"

#include <algorithm>

namespace suite::wiki {
namespace {
constexpr int kTemplate = 0, kParameter = 1, kTable = 2;
}  // namespace

void TemplateRemover::remove(std::string_view in, std::string& out) {
  stack_.clear();
  ranges_.clear();
  const size_t n = in.size();
  bool line_start = true;  // only spaces, tabs or ':' since the last newline
  size_t i = 0;
  while (i < n) {
    char c = in[i];
    char next = i + 1 < n ? in[i + 1] : '\0';
    if (c == '{') {
      if (next == '{') {
        bool param = i + 2 < n && in[i + 2] == '{';
        stack_.push_back({param ? kParameter : kTemplate, i});
        i += param ? 3 : 2;
        line_start = false;
        continue;
      }
      if (next == '|' && line_start) {
        stack_.push_back({kTable, i});
        i += 2;
        line_start = false;
        continue;
      }
    } else if (c == '}' && next == '}' && !stack_.empty() && stack_.back().kind != kTable) {
      // "{{{p}}}" closes with three braces; a parameter closed by two is forgiven.
      size_t len = stack_.back().kind == kParameter && i + 2 < n && in[i + 2] == '}' ? 3 : 2;
      ranges_.emplace_back(stack_.back().start, i + len);
      stack_.pop_back();
      i += len;
      line_start = false;
      continue;
    } else if (c == '|' && next == '}' && line_start && !stack_.empty() && stack_.back().kind == kTable) {
      ranges_.emplace_back(stack_.back().start, i + 2);
      stack_.pop_back();
      i += 2;
      line_start = false;
      continue;
    }
    if (c == '\n') line_start = true;
    else if (c != ' ' && c != '\t' && c != ':') line_start = false;
    ++i;
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
