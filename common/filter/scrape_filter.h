// The per-document chain of scrape-filter, stage by stage, each switchable:
//   URL rules -> (HTML main text) -> text repair -> minimum length -> language -> Gopher quality ->
//   Gopher repetition -> C4 (keeps its lines) -> FineWeb -> decontamination.
// Exact-duplicate URLs are the one rule with state across documents; the tool applies it in input
// order (first kept document wins) so that the result does not depend on the thread count.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/filter/decontaminate.h"
#include "common/filter/doc_text.h"
#include "common/filter/html_extract.h"
#include "common/filter/language_id.h"
#include "common/filter/quality_rules.h"
#include "common/filter/text_repair.h"
#include "common/filter/url_rules.h"

namespace suite::filter {

struct ScrapeConfig {
  bool url_rules = true;
  bool url_dedup = true;
  bool html = false;
  bool repair = true;
  RepairConfig repair_config;
  LengthConfig length;
  bool gopher_quality = true, gopher_repetition = true, c4 = true, fineweb = true;
  GopherQualityConfig gopher_quality_config;
  GopherRepetitionConfig gopher_repetition_config;
  C4Config c4_config;
  FineWebConfig fineweb_config;
  bool identify_language = false;
  LanguageConfig language;
};

// Turns a --rules list ("gopher,c4,fineweb", "gopher-quality", "gopher-repetition", "none", "all")
// into the four switches; throws UsageError on an unknown name.
void apply_rules_preset(std::string_view list, ScrapeConfig& c);

struct FilterResult {
  const char* rule = nullptr;              // the rule that dropped the document, or nullptr
  std::string_view text;                   // the final text (valid until the next call)
  bool text_changed = false;               // text differs from the input text
  std::vector<std::string_view> pieces;    // decontamination split the text into these
  std::optional<LanguageGuess> language;   // when identification ran
};

class ScrapeFilter {
 public:
  // `url_rules` and `decontaminator` are shared by all workers (read-only); either may be null.
  ScrapeFilter(const ScrapeConfig& config, const UrlRules* url_rules, const Decontaminator* decontaminator)
      : config_(config), url_rules_(url_rules), decontam_(decontaminator), repair_(config.repair_config) {}
  // The URL stage alone (nullptr: passes).
  const char* check_url(std::string_view url) const;
  // Every text stage. `input` is the text field, or the HTML page with config.html.
  void run(std::string_view input, FilterResult& r);

 private:
  const ScrapeConfig& config_;
  const UrlRules* url_rules_;
  const Decontaminator* decontam_;
  HtmlExtractor html_;
  TextRepair repair_;
  GopherRepetition repetition_;
  DocText doc_;
  std::string extracted_, repaired_, c4_kept_;
};

}  // namespace suite::filter
