// scrape-filter's JSONL job: the worker that runs the stages of scrape_filter.h on each document and
// rewrites it (other fields byte for byte; `text`, `lang`, `lang_score`), the in-order consumer that
// drops exact-duplicate URLs and writes kept documents and --rejects, and the per-rule summary.
#pragma once

#include <string>
#include <vector>

#include "common/cli/options.h"
#include "common/filter/decontaminate.h"
#include "common/filter/scrape_filter.h"
#include "common/filter/url_rules.h"

namespace suite::filter {

struct ScrapeFilterConfig {
  ScrapeConfig config;
  std::string url_key = "url", text_key = "text", html_key = "html";
  std::string rejects_path;  // empty: no --rejects
  UrlRulesConfig url_rules;
  std::vector<std::string> blocklists;      // --url-blocklist files
  std::vector<std::string> decontaminate;   // --decontaminate files; empty: no decontamination
  DecontamConfig decontam;
};

// Filters options.inputs (this shard's part) into options.output (and rejects_path), then prints
// the summary.
void run_scrape_filter(const CommonOptions& options, const ScrapeFilterConfig& settings);

}  // namespace suite::filter
