#include "common/wiki/wikitext.h"

#include "common/wiki/entities.h"
#include "common/wiki/html_tags.h"
#include "common/wiki/lines.h"

namespace suite::wiki {

void WikitextCleaner::clean(std::string_view wikitext, std::string& out) {
  a_.clear();
  strip_comments_and_tags(wikitext, a_);
  b_.clear();
  templates_.remove(a_, b_);
  a_.clear();
  links_.reduce(b_, a_);
  b_.clear();
  decode_html_entities(a_, b_);
  out.clear();
  format_lines(b_, out);
}

bool is_redirect_text(std::string_view wikitext) {
  size_t i = wikitext.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos || wikitext.size() - i < 9) return false;
  static constexpr char kWord[] = "#redirect";
  for (size_t k = 0; k < 9; ++k) {
    char c = wikitext[i + k];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    if (c != kWord[k]) return false;
  }
  return true;
}

}  // namespace suite::wiki
