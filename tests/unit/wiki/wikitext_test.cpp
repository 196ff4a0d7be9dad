// common/wiki: wikitext -> plain text, pass by pass and as a whole, on hand-written wikitext.
#include <doctest/doctest.h>

#include <string>

#include "common/wiki/entities.h"
#include "common/wiki/html_tags.h"
#include "common/wiki/lines.h"
#include "common/wiki/links.h"
#include "common/wiki/templates.h"
#include "common/wiki/wikitext.h"

using namespace suite::wiki;

namespace {
std::string clean(std::string_view wikitext) {
  WikitextCleaner cleaner;
  std::string out;
  cleaner.clean(wikitext, out);
  return out;
}
std::string tags(std::string_view s) {
  std::string out;
  strip_comments_and_tags(s, out);
  return out;
}
std::string templates(std::string_view s) {
  TemplateRemover r;
  std::string out;
  r.remove(s, out);
  return out;
}
std::string links(std::string_view s) {
  LinkReducer r;
  std::string out;
  r.reduce(s, out);
  return out;
}
std::string lines(std::string_view s) {
  std::string out;
  format_lines(s, out);
  return out;
}
std::string xml(std::string_view s) {
  std::string out;
  decode_xml_entities(s, out);
  return out;
}
std::string html(std::string_view s) {
  std::string out;
  decode_html_entities(s, out);
  return out;
}
}  // namespace

TEST_CASE("entities: XML decoding knows only the five XML names, HTML decoding many more") {
  CHECK(xml("a &lt;ref&gt; &amp;amp; &quot;q&quot; &apos;") == "a <ref> &amp; \"q\" '");
  CHECK(xml("&nbsp;") == "&nbsp;");  // not an XML entity: wikitext's own, decoded later
  CHECK(html("1&nbsp;km &mdash; caf&eacute; &#233; &#xE9; &#X2014;") == "1 km — café é é —");
  CHECK(html("AT&T &unknown; & &;") == "AT&T &unknown; & &;");
  CHECK(html("&#0; &#xD800; &#99999999;") == "\uFFFD \uFFFD \uFFFD");
  CHECK(html("soft&shy;hyphen") == "softhyphen");
}

TEST_CASE("comments and tags: refs go with their content, formatting tags keep it") {
  CHECK(tags("Fact.<ref name=\"a\">{{cite web|url=x}}</ref> Next<ref name=\"a\" /> end") == "Fact. Next end");
  CHECK(tags("x<REF>loud</REF>y") == "xy");
  CHECK(tags("a<!-- hidden\nnote -->b<!-- unclosed") == "ab");
  CHECK(tags("E = mc<sup>2</sup>, <span style=\"x\">kept</span>") == "E = mc2, kept");
  CHECK(tags("line<br/>break<br>two") == "line\nbreak\ntwo");
  CHECK(tags("<math>x^2</math>gone <gallery>\nA.jpg|a\n</gallery>too") == "gone too");
  CHECK(tags("<references/>") == "");
  CHECK(tags("3 < 5 and a <b c and <unknown>tag</unknown>") == "3 < 5 and a <b c and <unknown>tag</unknown>");
  CHECK(tags("<ref>never closed") == "never closed");  // the content stays, like MediaWiki's error output
}

TEST_CASE("templates: nested, parameters, tables inside templates and templates inside tables") {
  CHECK(templates("a{{b|{{c|d}}|e}}f") == "af");
  CHECK(templates("x{{{1|default}}}y") == "xy");
  CHECK(templates("{{Infobox\n| name = {{nowrap|X}}\n| table = \n{|\n| {{flag|DE}} || 1\n|}\n}}\nText") == "\nText");
  CHECK(templates("before\n{| class=\"wikitable\"\n|-\n! h\n|-\n| {{n|1}} || cell\n|}\nafter") == "before\n\nafter");
  CHECK(templates("indented\n:{|\n| x\n|}\nend") == "indented\n:\nend");
  // "{|" and "|}" count only at the start of a line.
  CHECK(templates("a {| b |} c") == "a {| b |} c");
  // Unclosed openers stay as text; what is properly nested inside them still goes.
  CHECK(templates("a {{b {{c}} d") == "a {{b  d");
  CHECK(templates("stray }} and |} stay") == "stray }} and |} stay");
}

TEST_CASE("links: internal, piped, trails, files, categories, interlanguage, external") {
  CHECK(links("[[Paris]] and [[Paris, Texas|the other one]]") == "Paris and the other one");
  CHECK(links("[[bus]]es") == "buses");
  CHECK(links("[[Help:Contents (page)|]] [[Paris (film)|]]") == "Contents Paris");
  CHECK(links("a[[File:X.jpg|thumb|A [[photo]] of [[Ulm]]]]b") == "ab");
  CHECK(links("[[Image:Y.png]][[Category:Physicists]][[category:lower]][[Datei:Z.jpg]]") == "");
  CHECK(links("[[de:Albert Einstein]][[zh-yue:X]][[simple:Y]]") == "");
  CHECK(links("[[:Category:Physicists]] [[:de:Berlin|Berlin (German)]]") == "Category:Physicists Berlin (German)");
  CHECK(links("[[Wikipedia:About]]") == "Wikipedia:About");
  CHECK(links("[http://example.org the label] [https://x.y] [//proto.rel rel] [ftp://f f]") == "the label  rel f");
  CHECK(links("[not a link] [http://no-close label\nnext]") == "[not a link] [http://no-close label\nnext]");
  CHECK(links("[[unclosed and [[inner]]") == "[[unclosed and inner");
  CHECK(links("[[a|b [[c|d]] e]]") == "b d e");
}

TEST_CASE("lines: headings and list items become plain lines, paragraphs one blank line") {
  CHECK(lines("== History ==\nText\n=== Early ===\nMore") == "History\nText\nEarly\nMore");
  // A heading whose section lost all its text (a table, a reference list) goes with it.
  CHECK(lines("Intro\n\n== Table ==\n\n== Life ==\nText\n== References ==\n\n") == "Intro\n\nLife\nText");
  CHECK(lines("* one\n** two\n# three\n: indented\n; term") == "one\ntwo\nthree\nindented\nterm");
  CHECK(lines("\n\npara one\n\n\n\npara two\n----\npara three\n\n") == "para one\n\npara two\n\npara three");
  CHECK(lines("__NOTOC__\n__TOC__ text __NOEDITSECTION__") == "text");
  CHECK(lines("Paris ( ) is (; ) a (city)   here") == "Paris is a (city) here");
  CHECK(lines("Einstein (; 1879 – 1955) and (, x)") == "Einstein (1879 – 1955) and (x)");
  CHECK(lines("__not_magic__") == "__not_magic__");
}

TEST_CASE("bold and italic quotes") {
  auto q = [](std::string_view s) {
    std::string out;
    strip_quotes_markup(s, out);
    return out;
  };
  CHECK(q("''italic'' '''bold''' '''''both'''''") == "italic bold both");
  CHECK(q("l'''avion''' rock 'n' roll") == "lavion rock 'n' roll");
  CHECK(q("''''four''''") == "'four'");
}

TEST_CASE("a whole article") {
  const char* article =
      "{{Short description|German physicist}}\n"
      "{{Infobox scientist\n| name = Albert {{small|(1879–1955)}}\n| image = Einstein.jpg\n}}\n"
      "'''Albert Einstein''' ({{IPA|de|ˈalbɛɐ̯t}}; 14 March 1879 – 18 April 1955) was a "
      "[[Germany|German]]-born [[theoretical physics|theoretical physicist]].<ref>{{cite book|title=X}}</ref>"
      " He developed the [[theory of relativity]].<ref name=\"r\"/>\n"
      "[[File:Einstein 1921.jpg|thumb|Einstein in 1921, by [[Ferdinand Schmutzer]]]]\n\n"
      "== Life ==\n"
      "Einstein was born in [[Ulm]]&nbsp;&ndash; in the [[Kingdom of Württemberg]].<!-- check -->\n"
      "* ''Annus mirabilis'' papers\n"
      "* [http://example.org Nobel Prize] in 1921\n"
      "{| class=\"wikitable\"\n! Year !! Work\n|-\n| 1905 || {{em|Relativity}}\n|}\n"
      "__NOTOC__\n"
      "[[Category:1879 births]]\n[[de:Albert Einstein]]\n";
  CHECK(clean(article) ==
        "Albert Einstein (14 March 1879 – 18 April 1955) was a German-born theoretical physicist. He developed "
        "the theory of relativity.\n\nLife\nEinstein was born in Ulm – in the Kingdom of Württemberg.\n"
        "Annus mirabilis papers\nNobel Prize in 1921");
}

TEST_CASE("entities inside wikitext decode after the markup is gone, so escaped markup stays text") {
  // The dump held "&amp;lt;ref&amp;gt;": the article shows a literal "<ref>".
  CHECK(clean("Use &lt;ref&gt; tags and &#91;&#91;links&#93;&#93;.") == "Use <ref> tags and [[links]].");
}

TEST_CASE("redirect text") {
  CHECK(is_redirect_text("#REDIRECT [[Target]]"));
  CHECK(is_redirect_text("  \n#redirect[[Target]]"));
  CHECK_FALSE(is_redirect_text("# Redirect is a list item"));
  CHECK_FALSE(is_redirect_text("Text"));
  CHECK_FALSE(is_redirect_text(""));
}
