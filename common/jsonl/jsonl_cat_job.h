// jsonl-cat's job: every valid JSONL document written back out (all fields, or only some).
#pragma once

#include <set>
#include <string>

#include "common/cli/options.h"

namespace suite {

struct JsonlCatConfig {
  std::set<std::string> fields;  // keep only these top-level fields; empty: the whole line
};

void run_jsonl_cat(const CommonOptions& options, const JsonlCatConfig& config);

}  // namespace suite
