// bpe-train: learn a GPT-2 style byte-level BPE vocabulary (vocab.json + merges.txt) from JSONL
// documents or plain text lines. Words are counted on --threads workers (one WordCounter each,
// merged at the end; memory grows with the number of distinct words, not with the corpus), then
// merged with HF tokenizers' BpeTrainer rules (common/tokenizer/trainer.h).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/io/line_chunker.h"
#include "common/io/output.h"
#include "common/io/output_lock.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/parallel/ordered_pipeline.h"
#include "common/progress/progress.h"
#include "common/tokenizer/trainer.h"
#include "common/tokenizer/vocab_io.h"
#include "common/unicode/utf8.h"

namespace suite {
namespace {

using bpe::WordCounter;

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
    for (int pass = 0; pass < 2; ++pass)
      for (const std::string& key : *keys_) {
        auto found = doc.field(key);  // the last of a repeated key, as in Python
        if (!found) throw DocumentError("missing field", "no \"" + key + "\" field");
        simdjson::dom::element el = *found;
        if (el.is_string()) {
          if (pass) c_->add_text(std::string_view(el.get_string().value_unsafe()));
          continue;
        }
        simdjson::dom::array array;
        bool ok = !el.get_array().get(array);
        if (ok)
          for (simdjson::dom::element item : array) {
            ok = ok && item.is_string();
            if (ok && pass) c_->add_text(std::string_view(item.get_string().value_unsafe()));
          }
        if (!ok) throw DocumentError("non-string field", "field \"" + key + "\" is not a string or an array of strings");
      }
    out.counts.add("kept");
  }

 private:
  std::shared_ptr<WordCounter> c_;
  const std::vector<std::string>* keys_;
};

// Plain text: each line with its "\n" is one sequence (HF train(files) feeding).
void count_lines(const CommonOptions& o, Counters_& counters) {
  LineChunker chunker(o.inputs, 1 << 20, o.max_line_bytes, o.on_error != OnError::kFail);
  Progress progress(o.quiet, chunker.total_raw_size());
  JsonlStats stats;
  using Pipeline = OrderedPipeline<LineChunk, ChunkOutput>;
  auto work = [&]() -> Pipeline::Work {
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
  Pipeline::run(o.threads, [&](LineChunk& chunk) { return chunker.next(chunk); }, work,
                [&](LineChunk&, ChunkOutput& out) {
                  stats.documents += out.documents;
                  stats.bytes += out.bytes;
                  stats.counts.merge(out.counts);
                  progress.update(stats.documents, stats.bytes, chunker.raw_bytes_read());
                });
  progress.summary(stats.documents, stats.bytes, stats.counts);
}

int body(int argc, char** argv) {
  Cli cli({.name = "bpe-train",
           .summary = "Train a GPT-2 style byte-level BPE tokenizer; writes vocab.json and merges.txt.",
           .example = "  bpe-train -i corpus.jsonl.zst --vocab-size 50257 --output-dir tok/\n"
                      "  bpe-encode --vocab-file tok/vocab.json --merge-file tok/merges.txt -i corpus.jsonl.zst\n"
                      "  bpe-train --input-format lines -i lines.txt --vocab-size 30000 --special-tokens --alphabet seen "
                      "--output-dir hf-like/",
           .details = "Pre-tokenization is GPT-2's; JSONL documents are counted whole (as bpe-encode sees them),\n"
                      "plain text (--input-format lines) line by line with each line's ending, as HF's\n"
                      "train(files) does. Merges follow HF's BpeTrainer: highest count first, ties to the\n"
                      "smaller (left id, right id). Special tokens are cut out of the training text and get\n"
                      "ids after the merges (GPT-2 layout: <|endoftext|> last) unless --specials-first.\n"
                      "Output files are written atomically (vocab.json in OpenAI's encoder.json layout,\n"
                      "merges.txt with a #version line)."});
  cli.options().add_options()                                                                              //
      ("output-dir", po::value<std::string>()->required(), "directory for vocab.json and merges.txt")       //
      ("vocab-size", po::value<size_t>()->default_value(50257), "final vocabulary size, specials included")  //
      ("min-frequency", po::value<uint64_t>()->default_value(0), "merge only pairs seen at least this often")  //
      ("special-tokens", po::value<std::vector<std::string>>()->multitoken()->zero_tokens(),
       "special tokens (default <|endoftext|>; give the option with no value for none)")  //
      ("specials-first", po::bool_switch(), "special tokens at ids 0..k-1 (HF layout) instead of last")  //
      ("alphabet", po::value<std::string>()->default_value("full"),
       "full: all 256 bytes are tokens (GPT-2); seen: only bytes that occur (a bare HF BpeTrainer)")  //
      ("input-format", po::value<std::string>()->default_value("jsonl"), "jsonl or lines (plain text)");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);
  const auto& vm = cli.vm();
  const std::string alphabet = vm["alphabet"].as<std::string>(), format = vm["input-format"].as<std::string>();
  if (alphabet != "full" && alphabet != "seen") throw UsageError("--alphabet must be full or seen, got '" + alphabet + "'");
  if (format != "jsonl" && format != "lines") throw UsageError("--input-format must be jsonl or lines, got '" + format + "'");
  bpe::TrainerOptions topt;
  topt.vocab_size = vm["vocab-size"].as<size_t>();
  topt.min_frequency = vm["min-frequency"].as<uint64_t>();
  if (vm.count("special-tokens")) topt.special_tokens = vm["special-tokens"].as<std::vector<std::string>>();
  std::erase(topt.special_tokens, std::string());
  topt.specials_first = vm["specials-first"].as<bool>();
  topt.full_byte_alphabet = alphabet == "full";
  const std::string dir = vm["output-dir"].as<std::string>();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ToolError(dir, "cannot create the output directory: " + ec.message());
  OutputLock lock(dir + "/.lock", dir + "/{vocab.json,merges.txt}");

  Counters_ counters;
  counters.cut_out = topt.special_tokens;
  if (format == "lines") {
    count_lines(options, counters);
  } else {
    const std::vector<std::string>* keys = &options.json_keys;
    run_jsonl(options, [&] { return std::make_unique<CountWorker>(counters.make(), keys); }, [](ChunkOutput&) {});
  }
  WordCounter words;
  for (auto& c : counters.all) words.merge_from(std::move(*c));
  counters.all.clear();

  Progress merging(options.quiet);
  topt.progress = [&](const bpe::TrainProgress& p) { merging.update_items("merges", p.merges_done, p.merges_target); };
  bpe::TrainResult result = train_bpe(words, topt);
  bpe::write_vocab_and_merges(dir, result.tokens, result.merges);
  if (!options.quiet)
    std::fprintf(stderr, "bpe-train: %zu distinct words, %zu merges, vocabulary %zu -> %s/{vocab.json,merges.txt} (%.2f s merging)\n",
                 words.distinct_words(), result.merges.size(), result.tokens.size(), dir.c_str(),
                 merging.elapsed_seconds());
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("bpe-train", argc, argv, suite::body); }
