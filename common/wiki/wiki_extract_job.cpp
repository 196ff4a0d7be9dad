#include "common/wiki/wiki_extract_job.h"

#include <atomic>
#include <memory>
#include <optional>

#include "common/io/input.h"
#include "common/io/output.h"
#include "common/io/parallel_bz2.h"
#include "common/parallel/chunk_runner.h"
#include "common/wiki/dump_reader.h"
#include "common/wiki/page_extractor.h"

namespace suite::wiki {
namespace {

constexpr size_t kBatchBytes = 1 << 20;
constexpr size_t kBatchPages = 2048;

// Reads the shard's inputs one after another and hands out batches of the pages it keeps.
class BatchSource {
 public:
  BatchSource(const std::vector<std::string>& inputs, const ShardPlan& plan, int threads, uint64_t max_page_bytes)
      : plan_(plan), threads_(threads), max_page_bytes_(max_page_bytes) {
    for (uint32_t f : plan.inputs) inputs_.push_back(inputs.empty() ? "-" : inputs[f]);
  }

  bool next(PageBatch& batch) {
    batch.clear();
    for (;;) {
      if (!reader_) {
        if (next_input_ == inputs_.size()) return !batch.pages.empty();
        reader_ = std::make_unique<DumpReader>(open_input_parallel(inputs_[next_input_++], threads_), max_page_bytes_);
      }
      PageSlice page;
      if (!reader_->next(page)) {
        finished_raw_ += reader_->raw_bytes_read();
        reader_.reset();
        if (!batch.pages.empty()) return true;  // a batch never spans two inputs
        continue;
      }
      raw_.store(finished_raw_ + reader_->raw_bytes_read(), std::memory_order_relaxed);
      if (!plan_.keeps(page_index_++)) continue;
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
  const ShardPlan& plan_;
  int threads_;
  uint64_t max_page_bytes_;
  size_t next_input_ = 0;
  std::unique_ptr<DumpReader> reader_;
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

}  // namespace

void run_wiki_extract(const CommonOptions& options, const WikiExtractConfig& config) {
  auto out = open_output(options.output);
  const ShardPlan plan = plan_shard(options.shard, options.inputs.size());
  BatchSource batches(options.inputs, plan, options.threads, options.max_line_bytes);
  ChunkSource<PageBatch> source{[&](PageBatch& batch) { return batches.next(batch); },
                                [&] { return batches.raw_bytes_read(); }, total_size(options.inputs)};
  run_ordered_chunks<PageBatch>(
      options, source,
      [&]() -> ChunkWork<PageBatch> {
        auto extractor = std::make_shared<PageExtractor>(options.on_error, config.base_url);
        return [extractor](const PageBatch& batch, ChunkOutput& result) { extractor->process(batch, result); };
      },
      [&](PageBatch&, ChunkOutput& result) { out->write(result.text); });
  out->close();
}

}  // namespace suite::wiki
