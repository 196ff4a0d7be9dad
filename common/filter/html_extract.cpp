#include "common/filter/html_extract.h"

#include <gumbo.h>

#include <array>
#include <cstring>

namespace suite::filter {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c + 32) : c; }

bool starts_with_ci(std::string_view s, size_t pos, std::string_view word) {
  if (s.size() - pos < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i)
    if (lower(s[pos + i]) != word[i]) return false;
  return true;
}

// Position after the closing tag </name ...>, or npos.
size_t find_close(std::string_view html, size_t from, std::string_view name) {
  for (size_t p = html.find("</", from); p != std::string_view::npos; p = html.find("</", p + 2)) {
    if (starts_with_ci(html, p + 2, name)) {
      size_t q = p + 2 + name.size();
      if (q >= html.size() || html[q] == '>' || html[q] == ' ' || html[q] == '\t' || html[q] == '\n' || html[q] == '/') {
        size_t gt = html.find('>', q);
        return gt == std::string_view::npos ? html.size() : gt + 1;
      }
    }
  }
  return std::string_view::npos;
}

constexpr std::array<std::string_view, 5> kCutTags = {"script", "style", "noscript", "template", "svg"};

bool is_block(GumboTag t) {
  switch (t) {
    case GUMBO_TAG_P: case GUMBO_TAG_DIV: case GUMBO_TAG_H1: case GUMBO_TAG_H2: case GUMBO_TAG_H3:
    case GUMBO_TAG_H4: case GUMBO_TAG_H5: case GUMBO_TAG_H6: case GUMBO_TAG_LI: case GUMBO_TAG_UL:
    case GUMBO_TAG_OL: case GUMBO_TAG_DL: case GUMBO_TAG_DT: case GUMBO_TAG_DD: case GUMBO_TAG_PRE:
    case GUMBO_TAG_BLOCKQUOTE: case GUMBO_TAG_TABLE: case GUMBO_TAG_TR: case GUMBO_TAG_SECTION:
    case GUMBO_TAG_ARTICLE: case GUMBO_TAG_MAIN: case GUMBO_TAG_FIGURE: case GUMBO_TAG_FIGCAPTION:
    case GUMBO_TAG_HR: case GUMBO_TAG_ADDRESS: case GUMBO_TAG_CAPTION: case GUMBO_TAG_TBODY:
    case GUMBO_TAG_THEAD: case GUMBO_TAG_TFOOT:
      return true;
    default:
      return false;
  }
}

bool is_paragraph(GumboTag t) {
  switch (t) {
    case GUMBO_TAG_P: case GUMBO_TAG_H1: case GUMBO_TAG_H2: case GUMBO_TAG_H3: case GUMBO_TAG_H4:
    case GUMBO_TAG_H5: case GUMBO_TAG_H6: case GUMBO_TAG_PRE: case GUMBO_TAG_BLOCKQUOTE: case GUMBO_TAG_TABLE:
    case GUMBO_TAG_UL: case GUMBO_TAG_OL: case GUMBO_TAG_DL: case GUMBO_TAG_SECTION: case GUMBO_TAG_ARTICLE:
      return true;
    default:
      return false;
  }
}

bool is_skipped(GumboTag t) {
  switch (t) {
    case GUMBO_TAG_NAV: case GUMBO_TAG_HEADER: case GUMBO_TAG_FOOTER: case GUMBO_TAG_ASIDE: case GUMBO_TAG_FORM:
    case GUMBO_TAG_BUTTON: case GUMBO_TAG_SELECT: case GUMBO_TAG_IFRAME: case GUMBO_TAG_MENU:
    case GUMBO_TAG_SCRIPT: case GUMBO_TAG_STYLE: case GUMBO_TAG_NOSCRIPT:
    case GUMBO_TAG_TEMPLATE: case GUMBO_TAG_SVG: case GUMBO_TAG_TEXTAREA: case GUMBO_TAG_OBJECT:
    case GUMBO_TAG_HEAD: case GUMBO_TAG_MATH:
      return true;
    default:
      return false;
  }
}

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void text(const char* s, size_t n, bool pre) {
    if (pre) {
      flush_breaks();
      out_.append(s, n);
      space_ = false;
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      char c = s[i];
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f') {
        space_ = true;
        continue;
      }
      flush_breaks();
      if (space_ && !out_.empty() && out_.back() != '\n') out_ += ' ';
      space_ = false;
      out_ += c;
    }
  }
  // Requests a line break (1) or a blank line (2) before the next text.
  void block(int breaks) {
    if (breaks > breaks_) breaks_ = breaks;
    space_ = false;
  }
  void finish() {
    while (!out_.empty() && (out_.back() == '\n' || out_.back() == ' ')) out_.pop_back();
  }

 private:
  void flush_breaks() {
    if (breaks_ && !out_.empty()) {
      while (!out_.empty() && out_.back() == ' ') out_.pop_back();
      out_.append(size_t(breaks_), '\n');
    }
    breaks_ = 0;
  }
  std::string& out_;
  int breaks_ = 0;
  bool space_ = false;
};

bool skip_by_attributes(const GumboElement& e) {
  static constexpr std::array<std::string_view, 4> kRoles = {"navigation", "banner", "contentinfo", "complementary"};
  for (unsigned i = 0; i < e.attributes.length; ++i) {
    auto* a = static_cast<const GumboAttribute*>(e.attributes.data[i]);
    std::string_view name = a->name;
    if (name == "id" || name == "class") {
      if (boilerplate_name(a->value)) return true;
    } else if (name == "role") {
      for (std::string_view r : kRoles)
        if (r == a->value) return true;
    } else if (name == "hidden" || (name == "aria-hidden" && std::strcmp(a->value, "true") == 0)) {
      return true;
    }
  }
  return false;
}

// Nesting deeper than this is not walked (bounded stack on hostile pages).
constexpr int kMaxDepth = 400;

void walk(const GumboNode* node, Writer& w, bool pre, int depth) {
  if (node->type == GUMBO_NODE_TEXT || node->type == GUMBO_NODE_WHITESPACE || node->type == GUMBO_NODE_CDATA) {
    const char* s = node->v.text.text;
    w.text(s, std::strlen(s), pre);
    return;
  }
  if (node->type != GUMBO_NODE_ELEMENT && node->type != GUMBO_NODE_TEMPLATE) return;
  const GumboElement& e = node->v.element;
  if (depth > kMaxDepth || is_skipped(e.tag) || skip_by_attributes(e)) return;
  if (e.tag == GUMBO_TAG_BR) {
    w.block(1);
    return;
  }
  int breaks = is_paragraph(e.tag) ? 2 : is_block(e.tag) ? 1 : 0;
  if (e.tag == GUMBO_TAG_TD || e.tag == GUMBO_TAG_TH) w.text(" ", 1, false);
  if (breaks) w.block(breaks);
  bool inner_pre = pre || e.tag == GUMBO_TAG_PRE;
  for (unsigned i = 0; i < e.children.length; ++i) walk(static_cast<const GumboNode*>(e.children.data[i]), w, inner_pre, depth + 1);
  if (breaks) w.block(breaks);
}

const GumboNode* find_body(const GumboNode* root) {
  if (root->type != GUMBO_NODE_ELEMENT) return nullptr;
  const GumboVector& kids = root->v.element.children;
  for (unsigned i = 0; i < kids.length; ++i) {
    auto* k = static_cast<const GumboNode*>(kids.data[i]);
    if (k->type == GUMBO_NODE_ELEMENT && k->v.element.tag == GUMBO_TAG_BODY) return k;
  }
  return root;
}

}  // namespace

bool boilerplate_name(std::string_view value) {
  // Words of the attribute value (split on spaces, '-' and '_'), lowercased: a word matches when it
  // starts with one of kPrefixes or equals one of kExact.
  static constexpr std::array<std::string_view, 16> kPrefixes = {
      "nav",     "sidebar", "footer",  "breadcrumb", "cookie",     "banner",  "masthead", "social",
      "sharing", "advert",  "related", "consent",    "newsletter", "sponsor", "headerlink", "popup"};
  static constexpr std::array<std::string_view, 8> kExact = {"ad", "ads", "menu", "menubar", "share", "skip",
                                                             "toc", "widget"};
  size_t i = 0;
  char word[32];
  while (i < value.size()) {
    size_t n = 0;
    while (i < value.size() && value[i] != ' ' && value[i] != '-' && value[i] != '_' && value[i] != '\t' &&
           value[i] != '\n') {
      if (n < sizeof word) word[n++] = lower(value[i]);
      ++i;
    }
    ++i;
    std::string_view w(word, n);
    if (w.empty()) continue;
    for (std::string_view p : kPrefixes)
      if (w.starts_with(p)) return true;
    for (std::string_view x : kExact)
      if (w == x) return true;
  }
  return false;
}

namespace {

bool name_end(std::string_view html, size_t q) {
  return q >= html.size() || html[q] == '>' || html[q] == ' ' || html[q] == '\t' || html[q] == '\n' ||
         html[q] == '\r' || html[q] == '/';
}

// End of the tag that starts at `lt` (after its '>'), skipping quoted attribute values.
size_t tag_end(std::string_view html, size_t from) {
  char quote = 0;
  for (size_t i = from; i < html.size(); ++i) {
    char c = html[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '>') {
      return i + 1;
    }
  }
  return html.size();
}

// Does the attribute text of a tag mark a boilerplate block (id/class words, role, hidden)?
bool attributes_boilerplate(std::string_view attrs) {
  static constexpr std::array<std::string_view, 4> kRoles = {"navigation", "banner", "contentinfo", "complementary"};
  size_t i = 0;
  while (i < attrs.size()) {
    while (i < attrs.size() && (attrs[i] == ' ' || attrs[i] == '\t' || attrs[i] == '\n' || attrs[i] == '\r' || attrs[i] == '/'))
      ++i;
    size_t ns = i;
    while (i < attrs.size() && attrs[i] != '=' && attrs[i] != ' ' && attrs[i] != '>' && attrs[i] != '\t' && attrs[i] != '\n')
      ++i;
    std::string_view name = attrs.substr(ns, i - ns);
    std::string_view value;
    if (i < attrs.size() && attrs[i] == '=') {
      ++i;
      if (i < attrs.size() && (attrs[i] == '"' || attrs[i] == '\'')) {
        char q = attrs[i++];
        size_t vs = i;
        while (i < attrs.size() && attrs[i] != q) ++i;
        value = attrs.substr(vs, i - vs);
        ++i;
      } else {
        size_t vs = i;
        while (i < attrs.size() && attrs[i] != ' ' && attrs[i] != '>' && attrs[i] != '\t' && attrs[i] != '\n') ++i;
        value = attrs.substr(vs, i - vs);
      }
    }
    if (name.empty()) {
      ++i;
      continue;
    }
    if (name == "id" || name == "class") {
      if (boilerplate_name(value)) return true;
    } else if (name == "role") {
      for (std::string_view r : kRoles)
        if (r == value) return true;
    } else if (name == "hidden" || (name == "aria-hidden" && value == "true")) {
      return true;
    }
  }
  return false;
}

// After the element `name` that opens at `from`, counting nested elements of the same name.
size_t element_end(std::string_view html, size_t from, std::string_view name) {
  int depth = 1;
  size_t p = from;
  while ((p = html.find('<', p)) != std::string_view::npos) {
    bool close = p + 1 < html.size() && html[p + 1] == '/';
    size_t ns = p + 1 + close;
    if (starts_with_ci(html, ns, name) && name_end(html, ns + name.size())) {
      depth += close ? -1 : 1;
      size_t e = tag_end(html, ns + name.size());
      if (depth == 0) return e;
      p = e;
    } else {
      ++p;
    }
  }
  return html.size();
}

// Blocks cut whole, always.
constexpr std::array<std::string_view, 6> kBoilerplateTags = {"nav", "header", "footer", "aside", "form", "iframe"};
// Blocks cut whole when their attributes say boilerplate.
constexpr std::array<std::string_view, 4> kContainerTags = {"div", "section", "ul", "table"};
// Inline tags that only wrap text: removed (open and close) before parsing, which spares gumbo most
// of its nodes on highlighted code. <a> opens are removed too (stray </a> are ignored by HTML5).
constexpr std::array<std::string_view, 22> kInlineTags = {"span", "code", "em",   "strong", "b",    "i",
                                                           "tt",   "kbd",  "var",  "samp",   "abbr", "small",
                                                           "sup",  "sub",  "u",    "s",      "mark", "cite",
                                                           "font", "bdi",  "bdo",  "q"};

}  // namespace

void strip_non_content(std::string_view html, std::string& out) {
  out.clear();
  out.reserve(html.size());
  size_t copied = 0, pos = 0;
  auto cut = [&](size_t from, size_t to, bool space) {
    out.append(html.data() + copied, from - copied);
    if (space) out += ' ';
    copied = pos = to;
  };
  while ((pos = html.find('<', pos)) != std::string_view::npos) {
    if (html.compare(pos, 4, "<!--") == 0) {
      size_t e = html.find("-->", pos + 4);
      cut(pos, e == std::string_view::npos ? html.size() : e + 3, true);
      continue;
    }
    const bool close = pos + 1 < html.size() && html[pos + 1] == '/';
    const size_t ns = pos + 1 + close;
    size_t ne = ns;
    while (ne < html.size() && (((html[ne] | 0x20) >= 'a' && (html[ne] | 0x20) <= 'z') || (html[ne] >= '0' && html[ne] <= '9')))
      ++ne;
    if (ne == ns || !name_end(html, ne)) {
      ++pos;
      continue;
    }
    char lname[16];
    size_t len = ne - ns;
    if (len >= sizeof lname) {
      pos = ne;
      continue;
    }
    for (size_t k = 0; k < len; ++k) lname[k] = lower(html[ns + k]);
    std::string_view name(lname, len);
    bool done = false;
    if (!close) {
      for (std::string_view tag : kCutTags)
        if (name == tag) {
          size_t gt = tag_end(html, ne);
          if (html[gt - 1] == '/' && tag == "svg") {
            cut(pos, gt, true);
          } else {
            size_t e = find_close(html, gt, tag);
            cut(pos, e == std::string_view::npos ? html.size() : e, true);
          }
          done = true;
          break;
        }
      if (done) continue;
      for (std::string_view tag : kBoilerplateTags)
        if (name == tag) {
          cut(pos, element_end(html, tag_end(html, ne), tag), true);
          done = true;
          break;
        }
      if (done) continue;
      for (std::string_view tag : kContainerTags)
        if (name == tag) {
          size_t gt = tag_end(html, ne);
          if (attributes_boilerplate(html.substr(ne, gt - ne))) {
            cut(pos, element_end(html, gt, tag), true);
            done = true;
          }
          break;
        }
      if (done) continue;
    }
    bool inline_tag = name == "a" && !close;
    for (std::string_view tag : kInlineTags) inline_tag |= name == tag;
    if (inline_tag) {
      size_t gt = tag_end(html, ne);
      if (close || !attributes_boilerplate(html.substr(ne, gt - ne))) {
        cut(pos, gt, false);
        continue;
      }
    }
    pos = ne;
  }
  out.append(html.data() + copied, html.size() - copied);
}

void HtmlExtractor::extract(std::string_view html, std::string& out) {
  out.clear();
  strip_non_content(html, stripped_);
  GumboOptions options = kGumboDefaultOptions;
  options.max_errors = 0;  // gumbo records parse errors otherwise; we do not read them
  GumboOutput* parsed = gumbo_parse_with_options(&options, stripped_.data(), stripped_.size());
  Writer w(out);
  if (const GumboNode* body = find_body(parsed->root)) walk(body, w, false, 0);
  w.finish();
  gumbo_destroy_output(&options, parsed);
}

}  // namespace suite::filter
