// common/filter: CLD2 language identification, decontamination, HTML main text and the chained
// ScrapeFilter.
#include <doctest/doctest.h>

#include <string>

#include "common/filter/scrape_filter.h"

using namespace suite::filter;

TEST_CASE("language: CLD2 code and score, the keep list and the threshold") {
  auto en = identify_language("The quick brown fox jumps over the lazy dog while the farmer watches from the porch.");
  CHECK(en.code == "en");
  CHECK(en.score > 0.9);
  auto de = identify_language("Der schnelle braune Fuchs springt über den faulen Hund, während der Bauer zuschaut.");
  CHECK(de.code == "de");
  auto zh = identify_language("敏捷的棕色狐狸跳过了那只懒狗，农夫在门廊上看着这一切。");
  CHECK(zh.code == "zh");
  CHECK(identify_language("").code == "un");
  LanguageConfig c{{"en", "de"}, 0.5};
  CHECK(language_rule(en, c) == nullptr);
  CHECK(language_rule(de, c) == nullptr);
  CHECK(std::string(language_rule(zh, c)) == "lang_not_allowed");
  LanguageGuess half{"en", 0.49, true};
  CHECK(std::string(language_rule(half, c)) == "lang_low_score");
  half.score = 0.5;
  CHECK(language_rule(half, c) == nullptr);
  CHECK(language_rule(zh, LanguageConfig{}) == nullptr);  // no list: record only
}

namespace {

const std::string kEval = "the committee voted seven to two in favour of the proposal after a long debate";

std::string words(size_t chars, char c) {
  std::string s;
  while (s.size() + 5 <= chars) s += std::string(4, c) + " ";
  return s + std::string(chars - s.size(), c);
}

}  // namespace

TEST_CASE("decontamination: a shared 13-gram splits the document around it (Megatron) or drops it") {
  Decontaminator d;
  d.add_eval_text(kEval);
  CHECK(d.ngrams() == 3);  // 15 words -> three 13-grams
  std::vector<std::string_view> pieces;
  const std::string left = words(400, 'a'), right = words(500, 'b');
  // Case and punctuation do not hide a match.
  const std::string doc = left + " The Committee voted seven, to two in favour of the proposal after a LONG debate. " + right;
  CHECK(d.check(doc, pieces) == nullptr);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0] == std::string_view(doc).substr(0, pieces[0].size()));
  CHECK(pieces[0].size() >= 200);
  CHECK(pieces[0].size() <= 401 - 200 + 1);
  CHECK(pieces[1].find('b') != std::string_view::npos);
  CHECK(pieces[1].find("committee") == std::string_view::npos);
  CHECK(d.check(left + " " + right, pieces) == nullptr);
  CHECK(pieces.empty());
  // Too little left on either side: the pieces are under 200 characters, the document goes.
  CHECK(std::string(d.check(words(100, 'a') + " " + kEval + " " + words(100, 'b'), pieces)) == "decontam_match");
  // Twelve words in a row are not a 13-gram.
  CHECK(d.check(left + " committee voted seven to two in favour of the proposal after a " + right, pieces) == nullptr);
  CHECK(pieces.empty());
  Decontaminator drop({.split = false});
  drop.add_eval_text(kEval);
  CHECK(std::string(drop.check(doc, pieces)) == "decontam_match");
}

TEST_CASE("decontamination: evaluation texts of 8..12 words match whole, shorter ones are ignored") {
  Decontaminator d;
  d.add_eval_text("alpha beta gamma delta epsilon zeta eta theta");  // 8 words
  d.add_eval_text("one two three four five six seven");              // 7 words: ignored
  CHECK(d.ngrams() == 1);
  std::vector<std::string_view> pieces;
  const std::string pad = words(400, 'p');
  CHECK(d.check(pad + " Alpha beta gamma delta epsilon zeta eta theta " + pad, pieces) == nullptr);
  CHECK(pieces.size() == 2);
  CHECK(d.check(pad + " alpha beta gamma delta epsilon zeta eta " + pad, pieces) == nullptr);
  CHECK(pieces.empty());
  CHECK(d.check(pad + " one two three four five six seven " + pad, pieces) == nullptr);
  CHECK(pieces.empty());
}

TEST_CASE("decontamination: more than 10 matches drop the document") {
  Decontaminator d;
  d.add_eval_text(kEval);
  std::string ten, eleven;
  for (int i = 0; i < 10; ++i) ten += words(800, 'x') + " " + kEval + " ";
  eleven = ten + words(800, 'x') + " " + kEval + " " + words(450, 'y');
  ten += words(450, 'y');
  std::vector<std::string_view> pieces;
  CHECK(d.check(ten, pieces) == nullptr);
  CHECK(pieces.size() == 11);
  CHECK(std::string(d.check(eleven, pieces)) == "decontam_too_many_splits");
}

TEST_CASE("HTML: main text without scripts, styles, navigation and boilerplate") {
  const std::string page =
      "<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style><script>var x='<p>no</p>';</script></head>"
      "<body><nav><a href='/'>Home</a> <a href='/b'>Blog</a></nav>"
      "<div class=\"sidebar\"><div><p>Related links</p></div></div>"
      "<header>Site header</header>"
      "<main><h1>Title <span class=x>here</span></h1><!-- a comment -->"
      "<p>First   paragraph with <b>bold</b> and <a href=#>a link</a>.</p>"
      "<p>Second&nbsp;paragraph &amp; entity.<br>After break.</p>"
      "<pre>code  line 1\n    indented</pre>"
      "<ul><li>one</li><li>two</li></ul>"
      "<div role=\"navigation\">Skip me</div>"
      "<div id=cookie-banner>We use cookies</div><svg><text>svg text</text></svg>"
      "</main><footer>Copyright</footer></body></html>";
  HtmlExtractor x;
  std::string text;
  x.extract(page, text);
  CHECK(text ==
        "Title here\n\nFirst paragraph with bold and a link.\n\nSecond\u00a0paragraph & entity.\nAfter break.\n\n"
        "code  line 1\n    indented\n\none\ntwo");
  x.extract("", text);
  CHECK(text.empty());
  x.extract("<p>unclosed <div>tags <table><td>cell", text);
  CHECK(text == "unclosed\n\ntags\n\ncell");  // HTML5: <div> closes the open <p>
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "<div>";
  x.extract(deep + "deep text", text);  // bounded walk: no stack overflow
}

TEST_CASE("boilerplate names") {
  CHECK(boilerplate_name("main-nav"));
  CHECK(boilerplate_name("col sidebar-left"));
  CHECK(boilerplate_name("ad"));
  CHECK(boilerplate_name("Footer"));
  CHECK(boilerplate_name("skip-link"));
  CHECK(boilerplate_name("navbar navbar-dark"));
  CHECK_FALSE(boilerplate_name("menuselection"));
  CHECK_FALSE(boilerplate_name("download"));
  CHECK_FALSE(boilerplate_name("content"));
  CHECK_FALSE(boilerplate_name("adventure"));
  CHECK_FALSE(boilerplate_name("body"));
}

TEST_CASE("ScrapeFilter: stages in order, each switchable") {
  ScrapeConfig c;
  c.gopher_quality = c.gopher_repetition = c.fineweb = false;
  c.c4_config.min_sentences = 1;
  UrlRules urls;
  urls.block_domain("spam.example");
  ScrapeFilter f(c, &urls, nullptr);
  CHECK(std::string(f.check_url("https://www.spam.example/x")) == "url_blocklist");
  CHECK(f.check_url("https://fine.example/x") == nullptr);
  FilterResult r;
  f.run("Caf\u00c3\u00a9 menu is good today.\r\nshort line", r);
  CHECK(r.rule == nullptr);
  CHECK(r.text == "Caf\u00e9 menu is good today.");  // repaired, then C4 kept one line
  CHECK(r.text_changed);
  CHECK_FALSE(r.language.has_value());
  ScrapeConfig none = c;
  apply_rules_preset("none", none);
  none.repair = false;
  none.url_rules = false;
  ScrapeFilter g(none, &urls, nullptr);
  CHECK(g.check_url("https://www.spam.example/x") == nullptr);
  g.run("as is  ", r);
  CHECK(r.rule == nullptr);
  CHECK(r.text == "as is  ");
  CHECK_FALSE(r.text_changed);
  ScrapeConfig lang = none;
  lang.identify_language = true;
  lang.language.keep = {"en"};
  ScrapeFilter h(lang, nullptr, nullptr);
  h.run("Der schnelle braune Fuchs springt über den faulen Hund, während der Bauer zuschaut.", r);
  CHECK(std::string(r.rule) == "lang_not_allowed");
  REQUIRE(r.language.has_value());
  CHECK(r.language->code == "de");
  CHECK_THROWS(apply_rules_preset("gopher,bogus", lang));
  apply_rules_preset("gopher,fineweb", lang);
  CHECK((lang.gopher_quality && lang.gopher_repetition && lang.fineweb && !lang.c4));
}
