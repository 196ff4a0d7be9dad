// Pass 3 of the wikitext cleaner: links become their visible text.
//
//   [[Target]] -> Target        [[Target|label]] -> label      [[Target (film)|]] -> Target (pipe trick)
//   [[bus]]es -> buses          [[:Category:X]] -> Category:X  [http://x.org label] -> label   [http://x.org] -> ""
//
// File/image/media links (with their captions), category links and interlanguage links ([[de:Titel]])
// are dropped. Labels may hold further links ([[File:..|caption with [[link]]]]), handled recursively.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace suite::wiki {

class LinkReducer {
 public:
  void reduce(std::string_view in, std::string& out);

 private:
  void reduce_range(size_t begin, size_t end, std::string& out, int depth);
  void internal_link(size_t open, size_t close, std::string& out, int depth);
  std::string_view in_;
  std::vector<size_t> stack_;
  std::vector<std::pair<size_t, size_t>> pairs_;  // "[[" position -> matching "]]" position, sorted
};

}  // namespace suite::wiki
