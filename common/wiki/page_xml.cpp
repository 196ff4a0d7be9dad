#include "common/wiki/page_xml.h"

namespace suite::wiki {
namespace {

constexpr auto npos = std::string_view::npos;

// Text of the first <name>...</name> in `xml`, or nullopt; `at` receives the element's offset.
std::optional<std::string_view> element(std::string_view xml, std::string_view open, std::string_view close,
                                        size_t& at) {
  size_t b = xml.find(open);
  if (b == npos) return std::nullopt;
  at = b;
  size_t e = xml.find(close, b + open.size());
  if (e == npos) return std::nullopt;
  return xml.substr(b + open.size(), e - b - open.size());
}

}  // namespace

std::optional<PageXmlError> parse_page_xml(std::string_view xml, PageXml& page) {
  page = PageXml{};
  if (size_t nested = xml.find("<page", 5); nested != npos)
    return PageXmlError{nested, "malformed XML: <page> inside another <page> (missing </page>)"};
  size_t revision = xml.find("<revision");
  if (revision == npos) return PageXmlError{0, "malformed page: no <revision>"};
  std::string_view head = xml.substr(0, revision);
  size_t at = 0;
  auto title = element(head, "<title>", "</title>", at);
  if (!title) return PageXmlError{0, "malformed page: no <title>...</title>"};
  page.title = *title;
  at = 0;  // a missing element is reported at the <page> line
  auto id = element(head, "<id>", "</id>", at);
  if (!id || id->empty() || id->find_first_not_of("0123456789") != npos || id->size() > 19)
    return PageXmlError{at, "malformed page: bad or missing page <id>"};
  page.id = *id;
  if (auto ns = element(head, "<ns>", "</ns>", at)) {
    std::string_view s = *ns;
    bool negative = !s.empty() && s[0] == '-';
    if (negative) s.remove_prefix(1);
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != npos)
      return PageXmlError{at, "malformed page: bad <ns> '" + std::string(*ns) + "'"};
    int64_t v = 0;
    for (char c : s) v = v * 10 + (c - '0');
    page.ns = negative ? -v : v;
  }
  page.redirect = head.find("<redirect") != npos;
  size_t text = xml.rfind("<text");
  while (text != npos && text > revision && text + 5 < xml.size() && xml[text + 5] != ' ' && xml[text + 5] != '>' &&
         xml[text + 5] != '/')
    text = xml.rfind("<text", text - 1);
  if (text == npos || text < revision) return PageXmlError{revision, "malformed page: no <text> in the revision"};
  size_t gt = xml.find('>', text);
  if (gt == npos) return PageXmlError{text, "malformed XML: unterminated <text> tag"};
  if (xml[gt - 1] == '/') return std::nullopt;  // <text ... /> : empty
  size_t close = xml.find("</text>", gt + 1);
  if (close == npos) return PageXmlError{text, "malformed XML: <text> without </text>"};
  page.text = xml.substr(gt + 1, close - gt - 1);
  return std::nullopt;
}

}  // namespace suite::wiki
