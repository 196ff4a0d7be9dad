// The rule pass over ICU's sentence breaks. ICU (UAX #29) knows no abbreviations, lists or
// ellipses; these rules remove the breaks it puts after "Mr." or "1." and add the ones it misses
// ("1) first 2) second"). Positions are byte offsets into the UTF-8 text; a break at b means a
// sentence starts at b (after the white space that ends the previous one).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "common/sentences/abbreviations.h"
#include "common/sentences/split_options.h"

namespace suite::sentences {

// Decides one break of ICU's: keep it, or join the sentences on both sides. Looks at the
// newline policy, the punctuation before the break and the word after it (abbreviations,
// initials, "Yahoo! in", "Jane.Doe@example.com").
bool keep_icu_break(std::string_view text, size_t b, const AbbreviationTable& abbr, NewlineMode newlines);

// Breaks to drop and to add, found by scanning the text for ellipses and list markers.
struct BoundaryEdits {
  std::vector<std::pair<uint32_t, uint32_t>> removed;  // breaks in [first, second) are dropped
  std::vector<uint32_t> added;                         // applied after the removals
  void clear() {
    removed.clear();
    added.clear();
  }
};

// Ellipses: ". . ." and "[...]" do not end a sentence; "word. . . . Next" ends after "word.",
// "end . . . . Next" after the fourth dot (the Golden Rules' conventions).
// Lists: "1.)", "2)", "3.", "a.", "• 9." markers that form a sequence start a sentence, and the
// break ICU puts right after "1." is dropped.
void find_punctuation_edits(std::string_view text, BoundaryEdits& edits);

}  // namespace suite::sentences
