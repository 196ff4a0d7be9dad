// Character references: &lt; &amp; &#8212; &#x2014; &nbsp; ...
//
// A dump escapes wikitext once for XML (&lt;ref&gt;), and wikitext may hold references of its own
// (&nbsp;, &mdash;), so decoding runs twice: XML entities on the raw <text>, then HTML entities on the
// cleaned text. Unknown names stay as written, like a browser would show them.
#pragma once

#include <string>
#include <string_view>

namespace suite::wiki {

// The five XML entities plus numeric references (what an XML parser decodes).
void decode_xml_entities(std::string_view in, std::string& out);

// Numeric references and the HTML named entities wikitext uses in practice (nbsp, mdash, eacute, ...).
// &nbsp; and the other fixed-width spaces become a plain space; soft hyphen and direction marks vanish.
void decode_html_entities(std::string_view in, std::string& out);

}  // namespace suite::wiki
