// sentence-split's job: each --json-keys field (a string) of every document becomes a JSON array of
// its sentences (sentence_splitter.h), every other field copied byte for byte, in input order.
#pragma once

#include <string>

#include "common/cli/options.h"
#include "common/sentences/split_options.h"

namespace suite::sentences {

struct SentenceSplitConfig {
  SplitOptions split;
  bool forced_lang = false;         // --lang given: ignore the documents' language field
  std::string lang_field = "lang";  // a document's detected language ("": none)
};

void run_sentence_split(const CommonOptions& options, const SentenceSplitConfig& config);

}  // namespace suite::sentences
