// wiki-extract's job: the inputs' pages (this shard's, ShardPlan) in batches, cleaned on --threads
// workers (page_extractor.h), written as JSONL in dump order, then the summary.
#pragma once

#include <string>

#include "common/cli/options.h"

namespace suite::wiki {

struct WikiExtractConfig {
  std::string base_url;  // --base-url; empty: from each dump's <siteinfo><base>
};

void run_wiki_extract(const CommonOptions& options, const WikiExtractConfig& config);

}  // namespace suite::wiki
