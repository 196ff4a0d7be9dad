// scrape-filter's JSONL job: the worker that runs the stages of scrape_filter.h on each document and
// rewrites it (other fields byte for byte; `text`, `lang`, `lang_score`), the in-order consumer that
// drops exact-duplicate URLs and writes kept documents and --rejects, and the per-rule summary.
#pragma once

#include <string>

#include "common/cli/options.h"
#include "common/filter/decontaminate.h"
#include "common/filter/scrape_filter.h"
#include "common/filter/url_rules.h"

namespace suite::filter {

struct JobSettings {
  ScrapeConfig config;
  std::string url_key = "url", text_key = "text", html_key = "html";
  std::string rejects_path;  // empty: no --rejects
};

// Filters options.inputs into options.output (and rejects_path), then prints the summary.
void run_filter_job(const CommonOptions& options, const JobSettings& settings, const UrlRules& url_rules,
                    const Decontaminator* decontam);

}  // namespace suite::filter
