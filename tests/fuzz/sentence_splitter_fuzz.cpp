// libFuzzer target: arbitrary bytes (any UTF-8 validity) through the sentence splitter in all
// three modes; spans must be ordered, non-empty and inside the text, and with keep_whitespace
// they must tile it exactly.
// fuzz-sources: common/sentences common/unicode common/cli common/io common/jsonl common/progress
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "common/sentences/sentence_splitter.h"

using namespace suite::sentences;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static SentenceSplitter trimmed({});
  static SentenceSplitter tiled({.newlines = NewlineMode::kParagraph, .keep_whitespace = true});
  static SentenceSplitter icu({.icu_only = true});
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<Span> spans;
  for (SentenceSplitter* s : {&trimmed, &icu}) {
    s->split(text, spans);
    uint32_t last = 0;
    for (const Span& sp : spans) {
      if (sp.begin < last || sp.begin >= sp.end || sp.end > size) std::abort();
      last = sp.end;
    }
  }
  tiled.split(text, spans);
  uint32_t pos = 0;
  for (const Span& sp : spans) {
    if (sp.begin != pos || sp.end <= sp.begin) std::abort();
    pos = sp.end;
  }
  if (pos != size) std::abort();
  return 0;
}
