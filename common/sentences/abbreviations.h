// Abbreviation knowledge for the rule pass after ICU: which words before a period do not end a
// sentence. Built once per language and shared read-only by all threads.
//
//   generic : ICU's own suppression list for the language (CLDR segments data, the "ss=standard"
//             list, read from ICU's data at run time) plus our additions (e.g., i.e., etc., Inc.,
//             Co., Jr., ...). They end a sentence only before a typical sentence starter.
//   titles  : prepositive titles (Mr., Dr., St., Mt., Prof., ...): never end a sentence.
//   numeric : abbreviations that take a number (No. 5, p. 55, Fig. 3, N°. 1026): no break before a digit.
//   ordinals: in German and some other languages "3. Mai" is a date, not a sentence end.
//   starters: words that typically begin an English sentence ("The", "It", "How", ...).
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

namespace suite::sentences {

class AbbreviationTable {
 public:
  // The table for a language code ("en", "de", ...); unknown languages get ICU's list if it has
  // one, and the language-neutral rules otherwise. Thread-safe; the table lives forever.
  static const AbbreviationTable& for_language(std::string_view lang);

  // `word` is the token before the period, without the period ("Mr", "U.S", "e.g").
  bool is_generic(std::string_view word) const { return generic_.count(word) > 0; }
  bool is_title(std::string_view word) const { return titles_.count(word) > 0; }
  bool is_numeric(std::string_view lowercase_word) const { return numeric_.count(lowercase_word) > 0; }
  bool is_starter(std::string_view word) const { return starters_.count(word) > 0; }
  bool has_starters() const { return !starters_.empty(); }
  // Languages that write ordinals with a period ("am 3. Mai", "den 2. Weltkrieg").
  bool ordinal_period() const { return ordinal_period_; }
  size_t icu_entries() const { return icu_entries_; }

  explicit AbbreviationTable(std::string_view lang);

 private:
  void add(std::unordered_set<std::string_view>& set, std::string s);
  std::unordered_set<std::string> storage_;
  std::unordered_set<std::string_view> generic_, titles_, numeric_, starters_;
  size_t icu_entries_ = 0;
  bool ordinal_period_ = false;
};

}  // namespace suite::sentences
