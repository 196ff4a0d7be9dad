// find_punctuation_edits: one scan over the text for '.' and ')' (ellipses and list markers).
#include <algorithm>
#include <cstring>

#include "common/sentences/boundary_rules.h"
#include "common/sentences/text_scan.h"

namespace suite::sentences {
namespace {

enum class MarkerStyle : uint8_t { kDotParen, kDot, kParen };  // "1.)", "1.", "1)"

struct ListMarker {
  uint32_t start;  // first byte, bullet included
  uint32_t end;    // after the ".", ")" or ".)"
  uint32_t key;    // style, digit/letter and value: markers of one list have consecutive keys
};

// Spaces and tabs only: the edits never touch a break at a newline.
size_t blanks_after(std::string_view s, size_t pos) {
  size_t p = pos;
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
  return p - pos;
}

// An unclosed '(' earlier on the same line (looking back a little): "f(x, 1) Then" is no list.
bool inside_parentheses(std::string_view s, size_t pos) {
  int depth = 0;
  for (size_t i = pos, steps = 0; i > 0 && steps < 256; --i, ++steps) {
    char c = s[i - 1];
    if (c == '\n') break;
    if (c == ')') ++depth;
    if (c == '(' && --depth < 0) return true;
  }
  return false;
}

size_t closers_after(std::string_view s, size_t pos) {
  size_t p = pos;
  for (;;) {
    if (p >= s.size()) break;
    char c = s[p];
    if (c == '"' || c == '\'' || c == ')' || c == ']' || c == '}') {
      ++p;
      continue;
    }
    std::string_view rest = s.substr(p);
    if (rest.starts_with("\u201D") || rest.starts_with("\u2019")) {
      p += 3;
      continue;
    }
    if (rest.starts_with("\u00BB")) {
      p += 2;
      continue;
    }
    break;
  }
  return p - pos;
}

// A list marker whose punctuation is at p ('.' or ')'), e.g. "2.)", "b.", "• 10.", "⁃9.".
bool list_marker_at(std::string_view s, size_t p, ListMarker& m) {
  MarkerStyle style;
  size_t end;
  if (s[p] == '.') {
    bool paren = p + 1 < s.size() && s[p + 1] == ')';
    style = paren ? MarkerStyle::kDotParen : MarkerStyle::kDot;
    end = p + (paren ? 2 : 1);
  } else {
    if (p > 0 && s[p - 1] == '.') return false;  // counted at its '.'
    style = MarkerStyle::kParen;
    end = p + 1;
  }
  if (end >= s.size() || !(s[end] == ' ' || s[end] == '\t')) return false;
  size_t k = p;
  while (k > 0 && is_ascii_digit(s[k - 1]) && p - k < 3) --k;
  uint32_t value, is_letter = 0;
  size_t start;
  if (p - k >= 1 && p - k <= 2 && !(k > 0 && is_ascii_digit(s[k - 1]))) {
    value = p - k == 1 ? s[k] - '0' : (s[k] - '0') * 10 + (s[k + 1] - '0');
    start = k;
  } else if (p - k == 0 && p >= 1 && is_ascii_lower(s[p - 1])) {
    value = s[p - 1] - 'a';
    is_letter = 1;
    start = p - 1;
  } else {
    return false;
  }
  // "3. The" but not "in 3. the" or "f(x, 1) and"
  size_t next = end + blanks_after(s, end);
  if (next >= s.size() || !is_ascii_upper(s[next])) return false;
  if (style == MarkerStyle::kParen && inside_parentheses(s, start)) return false;
  size_t first = start;
  if (start > 0 && !is_space_byte(s[start - 1])) {  // "⁃9."
    size_t n = bullet_before(s, start);
    if (n == 0) return false;
    first = start - n;
  } else if (start >= 2 && s[start - 1] == ' ') {  // "• 9."
    if (size_t n = bullet_before(s, start - 1); n > 0) first = start - 1 - n;
  }
  if (first > 0 && !is_space_byte(s[first - 1])) return false;
  m.start = static_cast<uint32_t>(first);
  m.end = static_cast<uint32_t>(end);
  m.key = (static_cast<uint32_t>(style) << 9) | (is_letter << 8) | value;
  return true;
}

void ellipsis_edits(std::string_view s, size_t first_dot, size_t run_end, int dots, bool spaced,
                    BoundaryEdits& edits) {
  size_t tail = run_end + closers_after(s, run_end);
  tail += blanks_after(s, tail);
  auto remove = [&](size_t from, size_t to) {
    edits.removed.emplace_back(static_cast<uint32_t>(from), static_cast<uint32_t>(to));
  };
  if (!spaced) {  // "..." and "....": ICU's breaks stand, except after "[...]"
    if (run_end < s.size() && s[run_end] == ']') remove(first_dot + 1, tail + 1);
    return;
  }
  if (dots == 3) {  // ". . ." inside a sentence
    remove(first_dot + 1, tail + 1);
    return;
  }
  bool attached = first_dot > 0 && !is_space_byte(s[first_dot - 1]);
  if (attached) {  // "compounds. . . . The": the sentence ends at "compounds."
    remove(first_dot + 1, tail + 1);
    edits.added.push_back(static_cast<uint32_t>(first_dot + 1 + blanks_after(s, first_dot + 1)));
  } else {  // "a period . . . . Next": ends after the fourth dot
    remove(first_dot + 1, tail);
  }
}

}  // namespace

void find_punctuation_edits(std::string_view s, BoundaryEdits& edits) {
  std::vector<ListMarker> markers;
  const size_t n = s.size();
  // Next '.' and ')' at or after i, each found with memchr and cached until passed.
  size_t next_dot = 0, next_paren = 0;
  auto find = [&](char c, size_t from) {
    const void* hit = from < n ? std::memchr(s.data() + from, c, n - from) : nullptr;
    return hit ? static_cast<size_t>(static_cast<const char*>(hit) - s.data()) : n;
  };
  next_dot = find('.', 0);
  next_paren = find(')', 0);
  for (size_t i = 0; i < n; ++i) {
    if (next_dot < i) next_dot = find('.', i);
    if (next_paren < i) next_paren = find(')', i);
    i = std::min(next_dot, next_paren);
    if (i >= n) break;
    char c = s[i];
    if (c == '.') {
      size_t j = i;
      int dots = 0;
      bool spaced = false;
      while (j < n) {
        if (s[j] == '.') {
          ++dots;
          ++j;
        } else if (s[j] == ' ' && j + 1 < n && s[j + 1] == '.') {
          spaced = true;
          ++j;
        } else {
          break;
        }
      }
      if (dots >= 3) {
        ellipsis_edits(s, i, j, dots, spaced, edits);
        i = j - 1;
        continue;
      }
      if (dots == 2) {
        i = j - 1;
        continue;
      }
    }
    ListMarker m;
    if (list_marker_at(s, i, m)) markers.push_back(m);
  }
  if (markers.size() < 2) return;
  // A marker belongs to a list when its predecessor comes shortly before it or its successor
  // shortly after ("1. ... 2. ..."), so a lone "at pos 0. This" stays a sentence end.
  constexpr uint32_t kListWindow = 1000;
  auto in_sequence = [&](size_t i) {
    const ListMarker& m = markers[i];
    for (size_t j = i + 1; j < markers.size() && markers[j].start - m.start < kListWindow; ++j)
      if (markers[j].key == m.key + 1) return true;
    for (size_t j = i; j-- > 0 && m.start - markers[j].start < kListWindow;)
      if ((m.key & 0xFF) > 0 && markers[j].key == m.key - 1) return true;
    return false;
  };
  size_t text_start = spaces_after(s, 0);
  for (size_t i = 0; i < markers.size(); ++i) {
    const ListMarker& m = markers[i];
    if (!in_sequence(i)) continue;
    if (m.start > text_start) edits.added.push_back(m.start);
    edits.removed.emplace_back(m.start + 1, static_cast<uint32_t>(m.end + blanks_after(s, m.end) + 1));
  }
}

}  // namespace suite::sentences
