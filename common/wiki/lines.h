// Last pass of the wikitext cleaner: line structure and inline markup.
//
// Every line is trimmed; headings ("== History ==") and list items ("* a", "# b", ": c", "; d") keep
// their own line without the markup, and a heading whose section has no text left goes; horizontal
// rules go; bold/italic quotes ('' '') and behaviour switches (__TOC__, __NOTOC__, ...) are
// removed; runs of spaces become one; parentheses left empty by removed templates ("Paris ( ) is") go,
// and so do separators they leave at the start of one ("({{IPA|..}}; born 1879)" -> "(born 1879)").
// Empty lines separate paragraphs: runs of them become one blank line, and none lead or trail.
#pragma once

#include <string>
#include <string_view>

namespace suite::wiki {

void format_lines(std::string_view in, std::string& out);

// Removes the bold/italic apostrophe runs of one line: '' and ''' and ''''' go, '''' leaves one
// apostrophe (MediaWiki reads it as an apostrophe followed by bold), longer runs keep the excess.
void strip_quotes_markup(std::string_view line, std::string& out);

}  // namespace suite::wiki
