#include "common/sentences/sentence_splitter.h"

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/utext.h>

#include <algorithm>
#include <stdexcept>

#include "common/sentences/abbreviations.h"
#include "common/sentences/text_scan.h"

namespace suite::sentences {

struct SentenceSplitter::Language {
  std::unique_ptr<icu::BreakIterator> iterator;
  const AbbreviationTable* abbreviations;
};

namespace {
constexpr size_t kMaxCachedLanguages = 64;  // documents name their language; bound the cache
}

std::string_view normalize_language(std::string_view lang) {
  if (lang.starts_with("__label__")) lang.remove_prefix(9);
  size_t n = 0;
  while (n < lang.size() && n < 3 && ((lang[n] >= 'a' && lang[n] <= 'z') || (lang[n] >= 'A' && lang[n] <= 'Z'))) ++n;
  if (n < 2 || (n < lang.size() && lang[n] != '-' && lang[n] != '_')) return {};
  lang = lang.substr(0, n);
  if (lang == "un" || lang == "und" || lang == "xx" || lang == "zxx") return {};
  return lang;
}

SentenceSplitter::SentenceSplitter(SplitOptions options) : options_(std::move(options)) {
  if (options_.lang.empty()) options_.lang = "en";
}

SentenceSplitter::~SentenceSplitter() {
  languages_.clear();  // iterators hold clones of utext_
  if (utext_) utext_close(utext_);
}

SentenceSplitter::Language& SentenceSplitter::language(std::string_view lang) {
  if (lang.empty()) lang = options_.lang;
  auto it = languages_.find(lang);
  if (it != languages_.end()) return *it->second;
  if (languages_.size() >= kMaxCachedLanguages) languages_.clear();
  std::string code(lang);
  for (char& c : code)
    if (c >= 'A' && c <= 'Z') c += 32;
  UErrorCode status = U_ZERO_ERROR;
  icu::Locale locale(options_.icu_only ? (code + "@ss=standard").c_str() : code.c_str());
  auto entry = std::make_unique<Language>();
  entry->iterator.reset(icu::BreakIterator::createSentenceInstance(locale, status));
  if (U_FAILURE(status) || !entry->iterator)
    throw std::runtime_error(std::string("ICU: cannot create a sentence break iterator for '") + code +
                             "': " + u_errorName(status));
  entry->abbreviations = &AbbreviationTable::for_language(code);
  return *languages_.emplace(std::string(lang), std::move(entry)).first->second;
}

void SentenceSplitter::split(std::string_view text, std::vector<Span>& out, std::string_view lang) {
  out.clear();
  if (text.empty()) return;
  if (text.size() > INT32_MAX) throw std::length_error("text longer than 2 GiB (ICU indexes are 32-bit)");
  Language& language = this->language(lang);
  UErrorCode status = U_ZERO_ERROR;
  utext_ = utext_openUTF8(utext_, text.data(), static_cast<int64_t>(text.size()), &status);
  language.iterator->setText(utext_, status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU: ") + u_errorName(status));

  breaks_.clear();
  const AbbreviationTable& abbr = *language.abbreviations;
  for (int32_t b = language.iterator->next(); b != icu::BreakIterator::DONE; b = language.iterator->next()) {
    if (static_cast<size_t>(b) >= text.size()) break;
    if (options_.icu_only || keep_icu_break(text, b, abbr, options_.newlines)) breaks_.push_back(b);
  }
  if (!options_.icu_only) {
    edits_.clear();
    find_punctuation_edits(text, edits_);
    if (!edits_.removed.empty()) {
      std::sort(edits_.removed.begin(), edits_.removed.end());
      size_t r = 0, w = 0;
      for (uint32_t b : breaks_) {
        while (r < edits_.removed.size() && edits_.removed[r].second <= b) ++r;
        bool removed = false;
        for (size_t k = r; k < edits_.removed.size() && edits_.removed[k].first <= b; ++k)
          if (b < edits_.removed[k].second) {
            removed = true;
            break;
          }
        if (!removed) breaks_[w++] = b;
      }
      breaks_.resize(w);
    }
    if (!edits_.added.empty()) {
      for (uint32_t a : edits_.added)
        if (a > 0 && a < text.size()) breaks_.push_back(a);
      std::sort(breaks_.begin(), breaks_.end());
      breaks_.erase(std::unique(breaks_.begin(), breaks_.end()), breaks_.end());
    }
  }
  emit(text, out);
}

// Turns breaks_ into spans: trims white space (unless keep_whitespace) and joins pieces with no
// letter or digit (". . .”", a lone "”") to the sentence before them.
void SentenceSplitter::emit(std::string_view text, std::vector<Span>& out) {
  const bool keep = options_.keep_whitespace;
  uint32_t begin = 0;
  bool pending_prefix = false;  // a first piece without letters, to be joined to the next one
  uint32_t prefix_begin = 0;
  auto piece = [&](uint32_t b, uint32_t e) {
    uint32_t tb = b + spaces_after(text.substr(0, e), b);
    uint32_t te = e - spaces_before(text.substr(0, e), e);
    if (tb >= te) {  // white space only
      if (keep) {
        if (!out.empty()) out.back().end = e;
        else if (!pending_prefix) pending_prefix = true, prefix_begin = b;
      }
      return;
    }
    Span span = keep ? Span{b, e} : Span{tb, te};
    // In line mode a line is a sentence even without letters ("}", "..." in code); otherwise a
    // piece without letters or digits (". . .”") belongs to the sentence before it.
    size_t k = tb;
    while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t' || text[k - 1] == '\r')) --k;
    bool line_start = options_.newlines == NewlineMode::kLine && k > 0 && text[k - 1] == '\n';
    bool words = options_.icu_only || line_start || has_alnum(text.substr(tb, te - tb));
    if (!words && !out.empty()) {
      out.back().end = span.end;
      return;
    }
    if (pending_prefix) {
      span.begin = prefix_begin;
      pending_prefix = false;
    }
    if (!words) {
      pending_prefix = true;
      prefix_begin = span.begin;
      return;
    }
    out.push_back(span);
  };
  for (uint32_t b : breaks_) {
    piece(begin, b);
    begin = b;
  }
  piece(begin, static_cast<uint32_t>(text.size()));
  if (pending_prefix) {  // nothing with letters followed: the whole text is one sentence
    uint32_t e = static_cast<uint32_t>(text.size());
    if (!keep) e -= spaces_before(text, e);
    out.push_back({prefix_begin, e});
  }
}

std::vector<std::string> SentenceSplitter::split_strings(std::string_view text, std::string_view lang) {
  std::vector<Span> spans;
  split(text, spans, lang);
  std::vector<std::string> result;
  for (const Span& s : spans) result.emplace_back(text.substr(s.begin, s.end - s.begin));
  return result;
}

}  // namespace suite::sentences
