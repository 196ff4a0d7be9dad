#include "common/sentences/abbreviations.h"

#include <unicode/udata.h>
#include <unicode/ures.h>
#include <unicode/ustring.h>
#include <unicode/utypes.h>

#include <map>
#include <memory>
#include <mutex>

namespace suite::sentences {
namespace {

// Additions to ICU's English list (CLDR lacks these; see the spec, §5.1). Lower- and capitalised
// forms are both listed where both occur in running text.
const char* const kEnglishGeneric[] = {
    "e.g", "i.e", "etc", "vs", "cf", "al", "viz", "approx", "ca", "esp", "incl", "Inc", "inc", "Ltd", "ltd",
    "Co", "co", "Corp", "corp", "Bros", "Jr", "Sr", "Dept", "dept", "Univ", "Ave", "Blvd", "Rd", "Assn",
    "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec", "a.m", "p.m",
    "Ph.D", "M.D", "B.A", "M.A", "B.Sc", "M.Sc", "Esq", "Gov", "Ed", "eds", "Vol", "No", "Nos", "Fig",
    "Figs", "Eq", "Ch", "Sec", "Art", "Tab", "Ref"};
const char* const kEnglishTitles[] = {
    "Mr", "Mrs", "Ms", "Mx", "Dr", "Prof", "St", "Mt", "Ft", "Capt", "Col", "Gen", "Lt", "Sgt", "Cpl", "Maj",
    "Adm", "Cmdr", "Rev", "Hon", "Sen", "Rep", "Pres", "Supt", "Messrs", "Mme", "Mlle", "Gov", "Insp",
    "MR", "MRS", "MS", "DR", "PROF", "Fr", "Sra", "Srta"};
// Lowercase; these take a following number.
const char* const kNumeric[] = {"no", "nos", "nr", "n°", "p", "pp", "fig", "figs", "vol", "vols", "ch", "chap",
                                "art", "sec", "para", "eq", "eqs", "ref", "refs", "tab", "op", "pg", "ex",
                                "ed", "approx", "ca", "nº", "abb", "bd", "s"};
const char* const kEnglishStarters[] = {
    "A", "Being", "Did", "For", "He", "How", "However", "I", "In", "It", "Millions", "More", "She", "That",
    "The", "There", "They", "We", "What", "When", "Where", "Who", "Why", "This", "These", "Those", "Then",
    "But", "And", "So", "If", "After", "Our", "His", "Her", "Its", "My", "Your", "You", "Their", "An", "As",
    "At", "On", "Is", "Are", "Was", "Were", "Do", "Does", "Can", "Will", "Please", "Let", "Here", "Some",
    "Many", "Most", "Each", "Yes", "To", "Also", "Thus", "Therefore", "Still", "Now", "Today", "Until",
    "Unless", "While", "Since", "Because", "Although", "Once", "Both", "Other", "Not", "Such", "Any", "Every",
    "One", "See", "Note", "Use", "Instead", "Otherwise", "Finally", "First", "Next", "Even", "Only", "Just",
    "Yet", "With", "From", "By", "Of", "Or", "Why", "Which", "Whether", "Although", "Despite", "During"};
// ICU's list holds ordinary words and single letters; the rule pass handles initials itself and
// lets ordinary words end sentences.
const char* const kIcuIgnored[] = {"All", "As", "By", "Do", "Go", "In", "Is", "Job", "Joe", "Link", "Long",
                                   "Hat", "On", "Or", "To", "Up", "Act", "Card", "Pro", "Id", "Ok", "OK",
                                   "Min", "Jam", "Mart", "Lev", "A.M", "P.M"};

// ICU's sentence-break exception list for `lang` (brkitr/<lang>.res, exceptions/SentenceBreak).
template <class F>
size_t for_each_icu_exception(const std::string& lang, F&& f) {
  UErrorCode status = U_ZERO_ERROR;
  UResourceBundle* bundle = ures_openDirect(U_ICUDATA_NAME U_TREE_SEPARATOR_STRING "brkitr", lang.c_str(), &status);
  if (U_FAILURE(status)) {
    ures_close(bundle);
    return 0;
  }
  size_t n = 0;
  UResourceBundle* exceptions = ures_getByKey(bundle, "exceptions", nullptr, &status);
  UResourceBundle* list = ures_getByKey(exceptions, "SentenceBreak", nullptr, &status);
  if (U_SUCCESS(status)) {
    for (int32_t i = 0, size = ures_getSize(list); i < size; ++i) {
      UErrorCode s = U_ZERO_ERROR;
      int32_t len = 0;
      const UChar* u = ures_getStringByIndex(list, i, &len, &s);
      if (U_FAILURE(s)) continue;
      std::string utf8(len * 3 + 1, '\0');
      int32_t out_len = 0;
      u_strToUTF8(utf8.data(), static_cast<int32_t>(utf8.size()), &out_len, u, len, &s);
      if (U_FAILURE(s)) continue;
      utf8.resize(out_len);
      f(std::move(utf8));
      ++n;
    }
  }
  ures_close(list);
  ures_close(exceptions);
  ures_close(bundle);
  return n;
}

}  // namespace

void AbbreviationTable::add(std::unordered_set<std::string_view>& set, std::string s) {
  set.insert(*storage_.insert(std::move(s)).first);
}

AbbreviationTable::AbbreviationTable(std::string_view lang_view) {
  std::string lang(lang_view);
  std::unordered_set<std::string> ignored(std::begin(kIcuIgnored), std::end(kIcuIgnored));
  icu_entries_ = for_each_icu_exception(lang, [&](std::string entry) {
    if (!entry.empty() && entry.back() == '.') entry.pop_back();
    if (entry.size() <= 1 || ignored.count(entry)) return;  // single letters: the initials rule
    add(generic_, std::move(entry));
  });
  for (const char* s : kNumeric) add(numeric_, s);
  for (const char* l : {"de", "da", "nb", "nn", "no", "fi", "cs", "sk", "pl", "hu", "sl", "hr", "sr", "bs", "tr",
                        "et", "lv", "lt", "is", "fo"})
    if (lang == l) ordinal_period_ = true;
  if (lang == "en") {
    for (const char* s : kEnglishGeneric) add(generic_, s);
    for (const char* s : kEnglishTitles) add(titles_, s);
    for (const char* s : kEnglishStarters) add(starters_, s);
  }
}

const AbbreviationTable& AbbreviationTable::for_language(std::string_view lang) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<AbbreviationTable>, std::less<>> tables;
  std::lock_guard lock(mutex);
  auto it = tables.find(lang);
  if (it == tables.end()) it = tables.emplace(std::string(lang), std::make_unique<AbbreviationTable>(lang)).first;
  return *it->second;
}

}  // namespace suite::sentences
