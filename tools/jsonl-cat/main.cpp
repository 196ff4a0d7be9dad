// jsonl-cat: read JSONL (plain, zstd, xz, bzip2), validate every line, and write it back out,
// optionally keeping only some fields. The smallest tool on the common/ document path, and the
// one that measures it (scripts/bench/jsonl_io.sh). The work is in common/jsonl/jsonl_cat_job.h.
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/jsonl/jsonl_cat_job.h"

namespace suite {
namespace {

int body(int argc, char** argv) {
  Cli cli({.name = "jsonl-cat",
           .summary = "Decompress, validate and re-emit JSONL documents (optionally only some fields).",
           .example = "  jsonl-cat -i crawl-00.jsonl.zst -i crawl-01.jsonl.xz --fields url text -o merged.jsonl.zst\n"
                      "  xzcat dump.jsonl.xz | jsonl-cat --on-error=skip > clean.jsonl",
           .reads_text = false});
  cli.options().add_options()("fields", po::value<std::vector<std::string>>()->multitoken(),
                              "keep only these top-level fields (in input order)");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);
  JsonlCatConfig config;
  if (cli.vm().count("fields")) {
    auto list = cli.vm()["fields"].as<std::vector<std::string>>();
    config.fields.insert(list.begin(), list.end());
  }
  run_jsonl_cat(options, config);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("jsonl-cat", argc, argv, suite::body); }
