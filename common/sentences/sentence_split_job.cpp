#include "common/sentences/sentence_split_job.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/io/output.h"
#include "common/jsonl/doc_fields.h"
#include "common/jsonl/json_writer.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/sentences/sentence_splitter.h"

namespace suite::sentences {
namespace {

class SplitWorker final : public DocumentWorker {
 public:
  SplitWorker(const SentenceSplitConfig& job, const std::vector<std::string>& keys)
      : job_(job), keys_(keys), splitter_(job.split) {}

  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override {
    std::string_view lang;
    if (!job_.forced_lang && !job_.lang_field.empty()) {
      auto el = doc.field(job_.lang_field);  // the last of a repeated key, as in Python
      std::string_view value;
      if (el && !el->get_string().get(value))
        lang = normalize_language(value);
    }
    // Validate every key before writing anything, so a skipped document leaves no partial line.
    texts_.clear();
    for (const std::string& key : keys_) texts_.push_back(read_text(doc, key));
    JsonObjectWriter obj(out.text);
    written_.assign(keys_.size(), false);
    for (const RawField& f : doc.raw_fields()) {
      size_t k = 0;
      while (k < keys_.size() && keys_[k] != f.key) ++k;
      if (k == keys_.size()) {
        obj.raw_field(f.raw_key, f.raw_value);
        continue;
      }
      if (written_[k]) continue;  // a repeated key: written once, with its last value
      written_[k] = true;
      splitter_.split(texts_[k], spans_, lang);
      array_.clear();
      array_ += '[';
      for (size_t i = 0; i < spans_.size(); ++i) {
        if (i) array_ += ',';
        append_json_string(array_, texts_[k].substr(spans_[i].begin, spans_[i].end - spans_[i].begin));
      }
      array_ += ']';
      obj.raw_field(f.raw_key, array_);
      out.counts.add("sentences", spans_.size());
    }
    obj.end_line();
    out.counts.add("kept");
  }

 private:
  const SentenceSplitConfig& job_;
  const std::vector<std::string>& keys_;
  SentenceSplitter splitter_;
  std::vector<std::string_view> texts_;
  std::vector<bool> written_;
  std::vector<Span> spans_;
  std::string array_;
};

}  // namespace

void run_sentence_split(const CommonOptions& options, const SentenceSplitConfig& config) {
  SentenceSplitter(config.split).split_strings("x");  // ICU trouble shows before any input is read
  auto out = open_output(options.output);
  const std::vector<std::string>& keys = options.json_keys;
  run_jsonl(options, [&] { return std::make_unique<SplitWorker>(config, keys); }, write_to(*out));
  out->close();
}

}  // namespace suite::sentences
