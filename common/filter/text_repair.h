// Text repair before the quality rules, in this order:
//   1. mojibake (mojibake.h): UTF-8 read as Windows-1252/Latin-1, undone;
//   2. control characters: C0 (except tab and newline), DEL, C1 and U+FEFF removed;
//   3. line endings: CRLF and CR become LF;
//   4. whitespace: Unicode space separators (U+00A0, U+2000..U+200A, U+202F, U+205F, U+3000) become
//      a plain space, trailing spaces and tabs of each line go, runs of 3+ newlines become two, and
//      the text is trimmed; indentation is kept (code stays readable);
//   5. Unicode NFC (ICU), skipped when ICU's quick check says the text is already NFC.
#pragma once

#include <string>
#include <string_view>

namespace suite::filter {

struct RepairConfig {
  bool mojibake = true;
  bool controls = true;
  bool whitespace = true;
  bool nfc = true;
};

class TextRepair {
 public:
  explicit TextRepair(RepairConfig config = {}) : config_(config) {}
  // Repairs `text` into `out` (cleared first). Returns true when the text changed.
  bool repair(std::string_view text, std::string& out);

 private:
  RepairConfig config_;
  std::string a_, b_;
};

// Steps 2-4 alone: appends the cleaned text to `out`.
void clean_controls_and_whitespace(std::string_view text, bool controls, bool whitespace, std::string& out);
// NFC via ICU; appends to `out`. Returns false (and appends `text` unchanged) when already NFC.
bool to_nfc(std::string_view text, std::string& out);

}  // namespace suite::filter
