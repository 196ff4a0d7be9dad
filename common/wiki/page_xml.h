// The fields of one <page> element of a dump (still XML-escaped), found by plain string search:
//
//   <page><title>T</title><ns>0</ns><id>12</id>[<redirect title="X"/>]
//     <revision>...<text bytes=".." xml:space="preserve">wikitext</text>...</revision></page>
//
// Full-history dumps hold several revisions; the last one's text is taken.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace suite::wiki {

struct PageXml {
  std::string_view title;  // escaped
  std::string_view id;     // digits
  int64_t ns = 0;          // 0 when the dump has no <ns> (schema before 0.6)
  bool redirect = false;   // a <redirect .../> element
  std::string_view text;   // escaped wikitext; empty for <text/>
};

struct PageXmlError {
  size_t offset;  // into the page's XML, for the line number
  std::string message;
};

// Fills `page` from "<page>...</page>"; the error says what is missing or malformed.
std::optional<PageXmlError> parse_page_xml(std::string_view xml, PageXml& page);

}  // namespace suite::wiki
