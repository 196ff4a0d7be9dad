// Options of the sentence splitter (the sentence-split tool's flags).
#pragma once

#include <string>

namespace suite::sentences {

enum class NewlineMode {
  kLine,       // every newline ends a sentence (ICU's behaviour; headings and list lines stay apart)
  kParagraph,  // a blank line always does; a single newline only after sentence-final punctuation
};

struct SplitOptions {
  std::string lang = "en";        // default language (ICU locale id, "en", "de", ...)
  NewlineMode newlines = NewlineMode::kLine;
  bool keep_whitespace = false;   // sentences keep their trailing white space: they concatenate to the text
  bool icu_only = false;          // plain ICU with its "ss=standard" suppressions, no rule pass
};

}  // namespace suite::sentences
