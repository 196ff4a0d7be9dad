// common/wiki: splitting a dump into pages, page fields, URLs and the per-page extractor.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/io/input.h"
#include "common/wiki/dump_reader.h"
#include "common/wiki/page_extractor.h"
#include "common/wiki/page_url.h"
#include "common/wiki/page_xml.h"

namespace fs = std::filesystem;
using namespace suite;
using namespace suite::wiki;

namespace {

struct TempFile {
  std::string path;
  explicit TempFile(std::string_view contents) {
    char tmpl[] = "/tmp/suite-wiki-XXXXXX";
    int fd = mkstemp(tmpl);
    ::close(fd);
    path = tmpl;
    std::ofstream(path, std::ios::binary) << contents;
  }
  ~TempFile() { fs::remove(path); }
};

std::string page(std::string_view title, int ns, int id, std::string_view text, bool redirect = false) {
  std::string p = "  <page>\n    <title>" + std::string(title) + "</title>\n    <ns>" + std::to_string(ns) +
                  "</ns>\n    <id>" + std::to_string(id) + "</id>\n";
  if (redirect) p += "    <redirect title=\"X\" />\n";
  p += "    <revision>\n      <id>9</id>\n      <text bytes=\"1\" xml:space=\"preserve\">" + std::string(text) +
       "</text>\n    </revision>\n  </page>\n";
  return p;
}

std::string dump(const std::string& pages, bool with_base = true) {
  std::string d = "<mediawiki xmlns=\"http://www.mediawiki.org/xml/export-0.10/\" version=\"0.10\">\n";
  d += "  <siteinfo>\n    <sitename>Test</sitename>\n";
  if (with_base) d += "    <base>https://xx.example.org/wiki/Main_Page</base>\n";
  d += "  </siteinfo>\n" + pages + "</mediawiki>\n";
  return d;
}

struct Read {
  std::vector<std::string> pages;
  std::vector<uint64_t> lines;
  std::string base;
};

Read read_dump(std::string_view contents) {
  TempFile f(contents);
  DumpReader reader(open_input(f.path));
  Read r;
  PageSlice slice;
  while (reader.next(slice)) {
    r.pages.emplace_back(slice.xml);
    r.lines.push_back(slice.line);
  }
  r.base = reader.base_url();
  return r;
}

std::string read_error(std::string_view contents) {
  try {
    read_dump(contents);
  } catch (const ToolError& e) {
    // The temporary file's name varies: keep ":line: what".
    std::string where = e.where();
    size_t colon = where.rfind(':');
    return (colon == std::string::npos ? std::string() : where.substr(colon)) + ": " + e.what();
  }
  return "no error";
}

// Runs the extractor over every page of a dump and returns its JSONL and counts.
ChunkOutput extract(std::string_view contents, OnError policy = OnError::kFail, std::string base = "") {
  TempFile f(contents);
  DumpReader reader(open_input(f.path));
  PageBatch batch;
  PageSlice slice;
  while (reader.next(slice)) {
    batch.pages.push_back({batch.xml.size(), slice.xml.size(), slice.line});
    batch.xml += slice.xml;
  }
  batch.source = "dump.xml";
  batch.base_url = reader.base_url();
  PageExtractor extractor(policy, base);
  ChunkOutput out;
  extractor.process(batch, out);
  return out;
}

}  // namespace

TEST_CASE("dump reader: pages in order with their line numbers, base URL from siteinfo") {
  Read r = read_dump(dump(page("A", 0, 1, "a") + page("B", 0, 2, "b")));
  REQUIRE(r.pages.size() == 2);
  CHECK(r.pages[0].rfind("<page>", 0) == 0);
  CHECK(r.pages[0].find("<title>A</title>") != std::string::npos);
  CHECK(r.pages[1].ends_with("</page>"));
  CHECK(r.lines == std::vector<uint64_t>{6, 15});
  CHECK(r.base == "https://xx.example.org/wiki/");
  CHECK(read_dump(dump("", false)).base.empty());
  CHECK(read_dump("<?xml version=\"1.0\"?>\n<!-- c -->\n" + dump(page("A", 0, 1, "a"))).pages.size() == 1);
}

TEST_CASE("dump reader: a page longer than the read buffer") {
  std::string big(9 << 20, 'x');
  Read r = read_dump(dump(page("Big", 0, 1, big)));
  REQUIRE(r.pages.size() == 1);
  CHECK(r.pages[0].size() > big.size());
}

TEST_CASE("dump reader: structure errors name the line") {
  std::string good = dump(page("A", 0, 1, "a") + page("B", 0, 2, "b"));
  // Cut in the middle of the second page (line 15 starts it).
  CHECK(read_error(good.substr(0, good.find("<title>B"))) ==
        ":15: unexpected end of file inside <page> (truncated dump?)");
  CHECK(read_error(good.substr(0, good.find("</mediawiki>"))) ==
        ":24: unexpected end of file: no </mediawiki> (truncated dump?)");
  CHECK(read_error("just text\n") == ":1: not a MediaWiki XML dump (no <mediawiki> element)");
  CHECK(read_error("") == ": not a MediaWiki XML dump (no <mediawiki> element)");
  std::string stray = good;
  stray.insert(stray.find("  <page>"), "stray\n");
  CHECK(read_error(stray) == ":6: malformed XML: text outside of <page> elements");
  std::string other = good;
  other.insert(other.find("  <page>"), "<logitem>\n");
  CHECK(read_error(other) == ":6: malformed XML: unexpected <logitem> between pages");
}

TEST_CASE("page fields") {
  PageXml p;  // views into the XML, which must outlive it
  const std::string article = page("T &amp; U", 0, 42, "body &lt;b&gt;");
  const std::string redirect = page("R", 0, 1, "#REDIRECT [[X]]", true);
  const std::string talk = page("Talk:T", 1, 1, "x");
  CHECK_FALSE(parse_page_xml(article, p));
  CHECK(p.title == "T &amp; U");
  CHECK(p.id == "42");
  CHECK(p.ns == 0);
  CHECK_FALSE(p.redirect);
  CHECK(p.text == "body &lt;b&gt;");
  CHECK_FALSE(parse_page_xml(redirect, p));
  CHECK(p.redirect);
  CHECK_FALSE(parse_page_xml(talk, p));
  CHECK(p.ns == 1);
  CHECK_FALSE(parse_page_xml("<page><title>E</title><ns>-1</ns><id>3</id><revision><text bytes=\"0\" /></revision></page>", p));
  CHECK(p.ns == -1);
  CHECK(p.text.empty());
  // Full history: the last revision's text.
  CHECK_FALSE(parse_page_xml("<page><title>H</title><ns>0</ns><id>3</id><revision><text>old</text></revision>"
                             "<revision><text>new</text></revision></page>", p));
  CHECK(p.text == "new");
  auto error = [](std::string_view xml) {
    PageXml q;
    auto e = parse_page_xml(xml, q);
    return e ? e->message : "ok";
  };
  CHECK(error("<page><ns>0</ns><id>1</id><revision><text>x</text></revision></page>") ==
        "malformed page: no <title>...</title>");
  CHECK(error("<page><title>T</title><ns>zero</ns><id>1</id><revision><text>x</text></revision></page>") ==
        "malformed page: bad <ns> 'zero'");
  CHECK(error("<page><title>T</title><ns>0</ns><revision><text>x</text></revision></page>") ==
        "malformed page: bad or missing page <id>");
  CHECK(error("<page><title>T</title><ns>0</ns><id>1</id><revision><text>x</revision></page>") ==
        "malformed XML: <text> without </text>");
  CHECK(error("<page><title>T</title><ns>0</ns><id>1</id><revision><text>x</text></revision><page></page>") ==
        "malformed XML: <page> inside another <page> (missing </page>)");
}

TEST_CASE("page URLs") {
  std::string url;
  append_page_url(url, kDefaultBaseUrl, "Albert Einstein");
  CHECK(url == "https://en.wikipedia.org/wiki/Albert_Einstein");
  url.clear();
  append_page_url(url, "https://de.wikipedia.org/wiki/", "AT&T? 100% #1 Zürich");
  CHECK(url == "https://de.wikipedia.org/wiki/AT%26T%3F_100%25_%231_Zürich");
}

TEST_CASE("extractor: articles only, in order, as {id, url, title, text}") {
  std::string pages = page("Alpha &amp; Beta", 0, 10, "'''Alpha''' is [[Greek alphabet|a letter]].") +
                      page("Redirect", 0, 11, "#REDIRECT [[Alpha]]", true) +
                      page("Redirect without element", 0, 12, "#redirect [[Alpha]]") +
                      page("Talk:Alpha", 1, 13, "Talk page") + page("Empty", 0, 14, "{{Stub}}") +
                      page("Gamma", 0, 15, "Gamma&amp;nbsp;ray");
  ChunkOutput out = extract(dump(pages));
  CHECK(out.text ==
        "{\"id\":\"10\",\"url\":\"https://xx.example.org/wiki/Alpha_%26_Beta\",\"title\":\"Alpha & Beta\","
        "\"text\":\"Alpha is a letter.\"}\n"
        "{\"id\":\"15\",\"url\":\"https://xx.example.org/wiki/Gamma\",\"title\":\"Gamma\",\"text\":\"Gamma ray\"}\n");
  CHECK(out.documents == 6);
  CHECK(out.counts.get("kept") == 2);
  CHECK(out.counts.get("redirects") == 2);
  CHECK(out.counts.get("other namespaces") == 1);
  CHECK(out.counts.get("empty after cleaning") == 1);
  // --base-url wins over siteinfo, and the English default applies without either.
  CHECK(extract(dump(page("G", 0, 1, "g")), OnError::kFail, "http://local/w/").text.find("\"http://local/w/G\"") !=
        std::string::npos);
  CHECK(extract(dump(page("G", 0, 1, "g"), false)).text.find("\"https://en.wikipedia.org/wiki/G\"") !=
        std::string::npos);
}

TEST_CASE("extractor: bad pages fail at their line, or are skipped or repaired") {
  std::string bad_utf8 = page("Bad", 0, 2, "line one\nbad \xff byte");
  std::string no_id = "  <page>\n    <title>NoId</title>\n    <ns>0</ns>\n    <revision><text>x</text></revision>\n  </page>\n";
  std::string contents = dump(page("Good", 0, 1, "good") + bad_utf8 + no_id + page("Last", 0, 4, "last"));
  try {
    extract(contents);
    FAIL("expected an error");
  } catch (const ToolError& e) {
    CHECK(e.where() == "dump.xml:22");  // the line of the invalid byte, not of <page>
    CHECK(std::string(e.what()) == "invalid UTF-8 in the page text");
  }
  ChunkOutput skipped = extract(contents, OnError::kSkip);
  CHECK(skipped.counts.get("kept") == 2);
  CHECK(skipped.counts.get("skipped: invalid UTF-8") == 1);
  CHECK(skipped.counts.get("skipped: malformed page") == 1);
  ChunkOutput replaced = extract(contents, OnError::kReplace);
  CHECK(replaced.counts.get("kept") == 3);
  CHECK(replaced.counts.get("replaced: invalid UTF-8") == 1);
  CHECK(replaced.text.find("bad \uFFFD byte") != std::string::npos);
  CHECK(replaced.counts.get("skipped: malformed page") == 1);  // nothing to repair there
}
