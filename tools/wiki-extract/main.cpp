// wiki-extract: a MediaWiki XML dump (plain or bzip2, multistream included) -> JSONL articles
// {id, url, title, text}. One thread splits the dump into pages, workers clean them in parallel,
// output stays in dump order; multistream bzip2 is also decompressed in parallel (common/io/parallel_bz2.h).
// The work is in common/wiki/.
#include <atomic>
#include <memory>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/io/input.h"
#include "common/io/output.h"
#include "common/io/parallel_bz2.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/parallel/ordered_pipeline.h"
#include "common/progress/progress.h"
#include "common/wiki/dump_reader.h"
#include "common/wiki/page_extractor.h"

namespace suite {
namespace {

const char* kExample =
    "  wiki-extract -i enwiki-latest-pages-articles-multistream.xml.bz2 -o enwiki.jsonl.zst\n"
    "  bzcat dump.xml.bz2 | wiki-extract --threads 8 > articles.jsonl\n"
    "  # 16 Slurm array tasks, each keeping every 16th page (all read the whole dump):\n"
    "  sbatch --array=0-15 --wrap 'wiki-extract --shard slurm -i dump.xml.bz2 -o part-$SLURM_ARRAY_TASK_ID.jsonl.zst'";

const char* kDetails =
    "Output, one line per article: {\"id\":\"12\",\"url\":\"<base>Title_with_underscores\",\"title\",\"text\"}\n"
    "(id as a string, like WikiExtractor --json). <base> is the directory of the dump's <siteinfo><base>\n"
    "(https://en.wikipedia.org/wiki/ when absent), or --base-url.\n"
    "Kept: pages of namespace 0 that are not redirects and have text after cleaning. Removed from the\n"
    "text: templates (not expanded), tables, <ref>s, comments, files/images, categories, interlanguage\n"
    "links, behaviour switches (__TOC__), bold/italic quotes. Links become their text; headings and list\n"
    "items stay as their own lines (without = * # : ;); blank lines separate paragraphs; entities are\n"
    "decoded (&nbsp; becomes a space).\n"
    "--shard I/N keeps page k (0-based, counting every <page> of all inputs in order) when k % N == I.\n"
    "Errors: a page that is malformed or not UTF-8 follows --on-error (replace repairs UTF-8 only);\n"
    "a broken dump structure (truncated file or compressed stream, text between pages, no\n"
    "<mediawiki>, a page longer than --max-line-bytes) always stops with `wiki-extract: file:line: what`,\n"
    "exit 1.";

constexpr size_t kBatchBytes = 1 << 20;
constexpr size_t kBatchPages = 2048;

// Reads the inputs one after another and hands out batches of the pages this shard keeps.
class BatchSource {
 public:
  BatchSource(const std::vector<std::string>& inputs, Shard shard, int threads, uint64_t max_page_bytes)
      : inputs_(inputs), shard_(shard), threads_(threads), max_page_bytes_(max_page_bytes) {
    if (inputs_.empty()) inputs_.push_back("-");
  }

  bool next(wiki::PageBatch& batch) {
    batch.clear();
    for (;;) {
      if (!reader_) {
        if (next_input_ == inputs_.size()) return !batch.pages.empty();
        reader_ = std::make_unique<wiki::DumpReader>(open_input_parallel(inputs_[next_input_++], threads_),
                                                     max_page_bytes_);
      }
      wiki::PageSlice page;
      if (!reader_->next(page)) {
        finished_raw_ += reader_->raw_bytes_read();
        reader_.reset();
        if (!batch.pages.empty()) return true;  // a batch never spans two inputs
        continue;
      }
      raw_.store(finished_raw_ + reader_->raw_bytes_read(), std::memory_order_relaxed);
      uint64_t index = page_index_++;
      if (shard_.active() && index % shard_.count != shard_.index) continue;
      if (batch.pages.empty()) {
        batch.source = reader_->name();
        batch.base_url = reader_->base_url();
      }
      batch.pages.push_back({batch.xml.size(), page.xml.size(), page.line});
      batch.xml += page.xml;
      if (batch.xml.size() >= kBatchBytes || batch.pages.size() >= kBatchPages) return true;
    }
  }

  uint64_t raw_bytes_read() const { return raw_.load(std::memory_order_relaxed); }

 private:
  std::vector<std::string> inputs_;
  Shard shard_;
  int threads_;
  uint64_t max_page_bytes_;
  size_t next_input_ = 0;
  std::unique_ptr<wiki::DumpReader> reader_;
  uint64_t page_index_ = 0;
  uint64_t finished_raw_ = 0;
  std::atomic<uint64_t> raw_{0};
};

std::optional<uint64_t> total_size(const std::vector<std::string>& inputs) {
  uint64_t total = 0;
  for (const std::string& path : inputs) {
    if (path.empty() || path == "-") return std::nullopt;
    auto in = open_input(path);
    auto size = in->raw_size();
    if (!size) return std::nullopt;
    total += *size;
  }
  return inputs.empty() ? std::nullopt : std::optional<uint64_t>(total);
}

int body(int argc, char** argv) {
  Cli cli({.name = "wiki-extract",
           .summary = "Extract the articles of a MediaWiki XML dump (plain or .bz2) as JSONL {id, url, title, text}.",
           .example = kExample,
           .reads_text = false,
           .shards = true,
           .details = kDetails});
  std::string base_url;
  cli.options().add_options()("base-url", po::value(&base_url),
                              "prefix of the article URLs (default: from the dump's <siteinfo><base>)");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);

  auto out = open_output(options.output);
  Progress progress(options.quiet, total_size(options.inputs));
  BatchSource source(options.inputs, options.shard, options.threads, options.max_line_bytes);
  JsonlStats stats;
  using Pipeline = OrderedPipeline<wiki::PageBatch, ChunkOutput>;
  Pipeline::run(
      options.threads, [&](wiki::PageBatch& batch) { return source.next(batch); },
      [&]() -> Pipeline::Work {
        auto extractor = std::make_shared<wiki::PageExtractor>(options.on_error, base_url);
        return [extractor](const wiki::PageBatch& batch, ChunkOutput& result) { extractor->process(batch, result); };
      },
      [&](wiki::PageBatch&, ChunkOutput& result) {
        out->write(result.text);
        stats.documents += result.documents;
        stats.bytes += result.bytes;
        stats.counts.merge(result.counts);
        progress.update(stats.documents, stats.bytes, source.raw_bytes_read());
      });
  out->close();
  progress.summary(stats.documents, stats.bytes, stats.counts);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("wiki-extract", argc, argv, suite::body); }
