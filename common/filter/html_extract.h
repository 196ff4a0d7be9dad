// Main-text extraction from an HTML page with a real HTML5 parser (gumbo).
//   1. A byte scanner cuts <script>, <style>, <noscript>, <template>, <svg> elements and comments
//      before parsing (gumbo spends most of its time tokenising those otherwise).
//   2. gumbo parses the rest; only <body> is walked.
//   3. Boilerplate is skipped: nav, header, footer, aside, form, button, select, iframe, menu,
//      dialog; elements with role navigation/banner/contentinfo/complementary/search; elements
//      whose id or class names navigation, menus, sidebars, footers, breadcrumbs, cookie banners,
//      share/social widgets or ads.
//   4. Text: whitespace collapsed (kept inside <pre>), block elements end lines, paragraphs,
//      headings, lists and tables are separated by blank lines.
#pragma once

#include <string>
#include <string_view>

namespace suite::filter {

// Step 1 alone: `html` without script/style/noscript/template/svg elements and comments.
void strip_non_content(std::string_view html, std::string& out);

class HtmlExtractor {
 public:
  // Extracts the main text of `html` into `out` (cleared first).
  void extract(std::string_view html, std::string& out);

 private:
  std::string stripped_;
};

// Does an id/class attribute value name a boilerplate block?
bool boilerplate_name(std::string_view value);

}  // namespace suite::filter
