#include "common/tokenizer/bpe_train_job.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>

#include "common/cli/error.h"
#include "common/io/output.h"
#include "common/io/line_chunker.h"
#include "common/io/output_lock.h"
#include "common/jsonl/doc_fields.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/parallel/chunk_runner.h"
#include "common/progress/progress.h"
#include "common/tokenizer/vocab_io.h"
#include "common/unicode/utf8.h"

namespace suite::bpe {
namespace {

// Every worker's counter, merged once counting is over.
struct Counters_ {
  std::mutex mu;
  std::vector<std::shared_ptr<WordCounter>> all;
  std::vector<std::string> cut_out;
  std::shared_ptr<WordCounter> make() {
    auto c = std::make_shared<WordCounter>(cut_out);
    std::lock_guard<std::mutex> lock(mu);
    all.push_back(c);
    return c;
  }
};

class CountWorker final : public DocumentWorker {
 public:
  CountWorker(std::shared_ptr<WordCounter> c, const std::vector<std::string>* keys) : c_(std::move(c)), keys_(keys) {}
  void process(JsonLine& doc, const DocContext&, ChunkOutput& out) override {
    // Check every field before counting any, so that a skipped document leaves no words behind.
    fields_.clear();
    for (const std::string& key : *keys_) fields_.push_back(read_text_or_sentences(doc, key));
    for (const TextOrSentences& field : fields_) field.for_each([&](std::string_view text) { c_->add_text(text); });
    out.counts.add("kept");
  }

 private:
  std::shared_ptr<WordCounter> c_;
  const std::vector<std::string>* keys_;
  std::vector<TextOrSentences> fields_;
};

// Plain text: each line with its "\n" is one sequence (HF train(files) feeding).
void count_lines(const CommonOptions& o, Counters_& counters) {
  LineChunker chunker(o.inputs, 1 << 20, o.max_line_bytes, o.on_error != OnError::kFail);
  ChunkSource<LineChunk> source{[&](LineChunk& chunk) { return chunker.next(chunk); },
                                [&] { return chunker.raw_bytes_read(); }, chunker.total_raw_size()};
  auto work = [&]() -> ChunkWork<LineChunk> {
    auto c = counters.make();
    return [c, policy = o.on_error](const LineChunk& chunk, ChunkOutput& out) {
      std::string_view text = chunk.text();
      out.documents = chunk.line_count + chunk.skipped_long_lines.size();
      out.bytes = text.size();
      if (!chunk.skipped_long_lines.empty()) out.counts.add("skipped: line too long", chunk.skipped_long_lines.size());
      if (unicode::utf8_is_valid(text)) return c->add_lines(text);
      for (uint64_t line = chunk.first_line; !text.empty(); ++line) {
        std::string_view one = text.substr(0, text.find('\n') + 1);
        text.remove_prefix(one.size());
        if (unicode::utf8_is_valid(one)) c->add_lines(one);
        else if (policy == OnError::kFail) throw ToolError(location(chunk.source, line), "invalid UTF-8");
        else if (policy == OnError::kSkip) out.counts.add("skipped: invalid UTF-8");
        else c->add_lines(unicode::utf8_repair(one)), out.counts.add("replaced: invalid UTF-8");
      }
    };
  };
  run_ordered_chunks<LineChunk>(o, source, work, [](LineChunk&, ChunkOutput&) {});
}

}  // namespace

void run_bpe_train(const CommonOptions& options, const BpeTrainConfig& config) {
  const std::string& dir = config.output_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ToolError(dir, "cannot create the output directory: " + ec.message());
  OutputLock lock(dir + "/.lock", dir + "/{vocab.json,merges.txt}");

  Counters_ counters;
  counters.cut_out = config.trainer.special_tokens;
  if (config.lines) {
    count_lines(options, counters);
  } else {
    const std::vector<std::string>* keys = &options.json_keys;
    run_jsonl(options, [&] { return std::make_unique<CountWorker>(counters.make(), keys); }, [](ChunkOutput&) {});
  }
  WordCounter words;
  for (auto& c : counters.all) words.merge_from(std::move(*c));
  counters.all.clear();

  Progress merging(options.quiet);
  TrainerOptions topt = config.trainer;
  topt.progress = [&](const TrainProgress& p) { merging.update_items("merges", p.merges_done, p.merges_target); };
  TrainResult result = train_bpe(words, topt);
  write_vocab_and_merges(dir, result.tokens, result.merges);
  if (!options.quiet)
    std::fprintf(stderr, "bpe-train: %zu distinct words, %zu merges, vocabulary %zu -> %s/{vocab.json,merges.txt} (%.2f s merging)\n",
                 words.distinct_words(), result.merges.size(), result.tokens.size(), dir.c_str(),
                 merging.elapsed_seconds());
}

}  // namespace suite::bpe
