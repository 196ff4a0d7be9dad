// Sentence segmentation: ICU's sentence BreakIterator (UAX #29) over the UTF-8 text, then a rule
// pass (boundary_rules.h) for abbreviations, initials, lists and ellipses. One splitter per
// thread: break iterators are expensive to create, so each language's is made once and reused.
//
//   SentenceSplitter splitter({.lang = "en"});
//   std::vector<Span> spans;
//   splitter.split("Mr. Smith came. He left.", spans);   // {0,15} {16,24}
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/sentences/boundary_rules.h"
#include "common/sentences/split_options.h"

struct UText;

namespace suite::sentences {

struct Span {
  uint32_t begin, end;  // byte offsets into the text
  bool operator==(const Span&) const = default;
};

class SentenceSplitter {
 public:
  explicit SentenceSplitter(SplitOptions options);
  ~SentenceSplitter();
  SentenceSplitter(const SentenceSplitter&) = delete;
  SentenceSplitter& operator=(const SentenceSplitter&) = delete;

  // Sentences of `text` (UTF-8; invalid bytes are treated as U+FFFD) in `lang` (empty: the
  // options' language). Without keep_whitespace the spans exclude surrounding white space and
  // no span is empty; with it, the spans tile the text.
  void split(std::string_view text, std::vector<Span>& out, std::string_view lang = {});
  std::vector<std::string> split_strings(std::string_view text, std::string_view lang = {});

  const SplitOptions& options() const { return options_; }

 private:
  struct Language;
  Language& language(std::string_view lang);
  void emit(std::string_view text, std::vector<Span>& out);

  SplitOptions options_;
  std::map<std::string, std::unique_ptr<Language>, std::less<>> languages_;
  UText* utext_ = nullptr;
  std::vector<uint32_t> breaks_;
  BoundaryEdits edits_;
};

// The language code to use for a document's `lang` value: "en-US", "en_US", "__label__en" -> "en";
// "", "un", "und" or anything that is not a language code -> "" (use the default).
std::string_view normalize_language(std::string_view lang);

}  // namespace suite::sentences
