// Article addresses: base + title with spaces as underscores, e.g.
//   ("https://en.wikipedia.org/wiki/", "Albert Einstein") -> https://en.wikipedia.org/wiki/Albert_Einstein
// Characters that would end or break the path (% ? # & " ' < > + = \ ^ ` { | } and controls) are
// percent-encoded as MediaWiki does; other UTF-8 is kept as is (what browsers show).
#pragma once

#include <string>
#include <string_view>

namespace suite::wiki {

inline constexpr std::string_view kDefaultBaseUrl = "https://en.wikipedia.org/wiki/";

void append_page_url(std::string& out, std::string_view base, std::string_view title);

}  // namespace suite::wiki
