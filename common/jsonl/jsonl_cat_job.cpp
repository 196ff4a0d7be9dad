#include "common/jsonl/jsonl_cat_job.h"

#include <memory>

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

}  // namespace

void run_jsonl_cat(const CommonOptions& options, const JsonlCatConfig& config) {
  auto out = open_output(options.output);
  const std::set<std::string>* keep = config.fields.empty() ? nullptr : &config.fields;
  run_jsonl(options, [keep] { return std::make_unique<CatWorker>(keep); }, write_to(*out));
  out->close();
}

}  // namespace suite
