// libFuzzer target: arbitrary bytes as the <text> of a page and as a whole <page> element. The
// cleaner must never crash or loop, and valid UTF-8 in must give valid UTF-8 out (every pass cuts
// only at ASCII markup, and entities decode to scalar values).
// fuzz-sources: common/wiki common/unicode common/cli common/jsonl common/io common/progress
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/unicode/utf8.h"
#include "common/wiki/entities.h"
#include "common/wiki/page_xml.h"
#include "common/wiki/wikitext.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static suite::wiki::WikitextCleaner cleaner;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string wikitext, text;
  suite::wiki::decode_xml_entities(in, wikitext);
  cleaner.clean(wikitext, text);
  if (suite::unicode::utf8_is_valid(in) && !suite::unicode::utf8_is_valid(text)) std::abort();
  suite::wiki::PageXml page;
  if (!suite::wiki::parse_page_xml(in, page)) {
    // The fields lie inside the input.
    for (std::string_view field : {page.title, page.id, page.text})
      if (!field.empty() && (field.data() < in.data() || field.data() + field.size() > in.data() + in.size()))
        std::abort();
  }
  return 0;
}
