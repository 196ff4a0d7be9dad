// Wikitext -> plain text, in passes that each do one job (see the headers they come from):
//
//   html_tags.h   comments, <ref>, <math>, <gallery>, HTML tables go; formatting tags go, content stays
//   templates.h   {{templates}} (nested), {{{parameters}}}, {|tables|} go
//   links.h       [[a|b]] -> b, [[a]] -> a, [http://x label] -> label; files, categories, interwiki go
//   entities.h    &nbsp; &mdash; &#8212; ... decoded
//   lines.h       headings and list items as lines, bold/italic and __TOC__ gone, spaces and blank lines
//
// The input is wikitext as MediaWiki stores it, i.e. after the dump's own XML escaping was undone.
// One cleaner per thread: it keeps its scratch buffers between pages.
#pragma once

#include <string>
#include <string_view>

#include "common/wiki/links.h"
#include "common/wiki/templates.h"

namespace suite::wiki {

class WikitextCleaner {
 public:
  // Replaces `out` with the plain text of `wikitext`.
  void clean(std::string_view wikitext, std::string& out);

 private:
  std::string a_, b_;
  TemplateRemover templates_;
  LinkReducer links_;
};

// True for "#REDIRECT [[Target]]" (any case, leading whitespace allowed): the text of a redirect page.
bool is_redirect_text(std::string_view wikitext);

}  // namespace suite::wiki
