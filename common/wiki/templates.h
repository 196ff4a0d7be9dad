// Pass 2 of the wikitext cleaner: templates {{...}}, template parameters {{{...}}} and tables {|...|},
// nested in any combination, are removed with their content (templates are not expanded).
//
// A table opens with "{|" and closes with "|}" only at the start of a line (after spaces or the ':'
// of an indented table), as in MediaWiki. An opener that is never closed stays as text (MediaWiki
// shows it literally), while anything properly nested inside it is still removed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace suite::wiki {

class TemplateRemover {
 public:
  void remove(std::string_view in, std::string& out);

 private:
  struct Open {
    int kind;  // 0 template, 1 parameter, 2 table
    size_t start;
  };
  std::vector<Open> stack_;
  std::vector<std::pair<size_t, size_t>> ranges_;  // [begin, end) to drop
};

}  // namespace suite::wiki
