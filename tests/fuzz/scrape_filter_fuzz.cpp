// libFuzzer target: arbitrary bytes through the text stages of scrape-filter (HTML extraction,
// mojibake repair, whitespace/NFC repair, every quality rule, CLD2) must never crash or read out of
// bounds; invalid UTF-8 is repaired first, as the JSONL reader guarantees valid UTF-8 text.
// fuzz-sources: common/cli common/filter common/io common/jsonl common/progress common/unicode
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/filter/scrape_filter.h"
#include "common/unicode/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const suite::filter::ScrapeConfig text_config = [] {
    suite::filter::ScrapeConfig c;
    c.identify_language = true;
    c.language.keep = {"en"};
    c.c4_config.min_sentences = 0;
    c.gopher_quality_config.min_words = 0;
    return c;
  }();
  static const suite::filter::ScrapeConfig html_config = [] {
    suite::filter::ScrapeConfig c = text_config;
    c.html = true;
    return c;
  }();
  static suite::filter::UrlRules urls;
  std::string input = suite::unicode::utf8_repair(std::string_view(reinterpret_cast<const char*>(data), size));
  suite::filter::FilterResult r;
  suite::filter::ScrapeFilter text(text_config, &urls, nullptr);
  text.check_url(input);
  text.run(input, r);
  suite::filter::ScrapeFilter html(html_config, &urls, nullptr);
  html.run(input, r);
  return 0;
}
