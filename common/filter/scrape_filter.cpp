#include "common/filter/scrape_filter.h"

#include "common/cli/error.h"

namespace suite::filter {

void apply_rules_preset(std::string_view list, ScrapeConfig& c) {
  c.gopher_quality = c.gopher_repetition = c.c4 = c.fineweb = false;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view name = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (name.empty()) continue;
    if (name == "none") continue;
    if (name == "all") {
      c.gopher_quality = c.gopher_repetition = c.c4 = c.fineweb = true;
    } else if (name == "gopher") {
      c.gopher_quality = c.gopher_repetition = true;
    } else if (name == "gopher-quality") {
      c.gopher_quality = true;
    } else if (name == "gopher-repetition") {
      c.gopher_repetition = true;
    } else if (name == "c4") {
      c.c4 = true;
    } else if (name == "fineweb") {
      c.fineweb = true;
    } else {
      throw UsageError("--rules: unknown rule set '" + std::string(name) +
                       "' (use gopher, gopher-quality, gopher-repetition, c4, fineweb, all or none)");
    }
  }
}

const char* ScrapeFilter::check_url(std::string_view url) const {
  if (!config_.url_rules || !url_rules_) return nullptr;
  return url_rules_->check(url);
}

void ScrapeFilter::run(std::string_view input, FilterResult& r) {
  r.rule = nullptr;
  r.pieces.clear();
  r.language.reset();
  r.text_changed = false;
  std::string_view text = input;
  if (config_.html) {
    html_.extract(input, extracted_);
    text = extracted_;
    r.text_changed = true;
  }
  if (config_.repair) {
    if (repair_.repair(text, repaired_)) {
      text = repaired_;
      r.text_changed = true;
    }
  }
  r.text = text;
  doc_.reset(text);
  if ((r.rule = length_rule(doc_, config_.length))) return;
  if (config_.identify_language) {
    r.language = identify_language(text);
    if ((r.rule = language_rule(*r.language, config_.language))) return;
  }
  if (config_.gopher_quality && (r.rule = gopher_quality(doc_, config_.gopher_quality_config))) return;
  if (config_.gopher_repetition && (r.rule = repetition_.check(doc_, config_.gopher_repetition_config))) return;
  if (config_.c4) {
    if ((r.rule = c4_quality(doc_, config_.c4_config, c4_kept_))) return;
    if (c4_kept_ != text) {
      text = c4_kept_;
      r.text = text;
      r.text_changed = true;
      doc_.reset(text);
    }
  }
  if (config_.fineweb && (r.rule = fineweb_quality(doc_, config_.fineweb_config))) return;
  if (decontam_) r.rule = decontam_->check(text, r.pieces);
}

}  // namespace suite::filter
