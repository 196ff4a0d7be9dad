// jsonl-cat: read JSONL (plain, zstd, xz, bzip2), validate every line, and write it back out,
// optionally keeping only some fields. The smallest tool on the common/ document path, and the
// one that measures it (scripts/bench/jsonl_io.sh).
#include <memory>
#include <set>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/io/output.h"
#include "common/jsonl/json_writer.h"
#include "common/jsonl/jsonl_runner.h"

namespace suite {
namespace {

class CatWorker final : public DocumentWorker {
 public:
  explicit CatWorker(const std::set<std::string>* fields) : fields_(fields) {}
  void process(JsonLine& doc, const DocContext&, ChunkOutput& out) override {
    if (!fields_) {
      out.text += doc.line();
      out.text += '\n';
    } else {
      JsonObjectWriter obj(out.text);
      for (const RawField& f : doc.raw_fields())
        if (fields_->count(f.key)) obj.raw_field(f.raw_key, f.raw_value);
      obj.end_line();
    }
    out.counts.add("kept");
  }

 private:
  const std::set<std::string>* fields_;
};

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
  std::set<std::string> fields;
  if (cli.vm().count("fields")) {
    auto list = cli.vm()["fields"].as<std::vector<std::string>>();
    fields.insert(list.begin(), list.end());
  }
  auto out = open_output(options.output);
  const std::set<std::string>* keep = fields.empty() ? nullptr : &fields;
  run_jsonl(options, [keep] { return std::make_unique<CatWorker>(keep); }, write_to(*out));
  out->close();
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("jsonl-cat", argc, argv, suite::body); }
