// The one ordered chunk runner of the tools: a source hands out chunks of input (lines of JSONL,
// pages of a wiki dump, lines of text), --threads workers turn each into a ChunkOutput, and the
// calling thread consumes the outputs strictly in input order while progress lines and the final
// summary are kept here. JSONL tools reach it through run_jsonl (common/jsonl/jsonl_runner.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/cli/options.h"
#include "common/parallel/ordered_pipeline.h"
#include "common/progress/counters.h"
#include "common/progress/progress.h"

namespace suite {

// What one chunk of input produced. `text` is what goes to the output; tools that write something
// else (token ids for a dataset, word counts) keep it in their own worker state or in `payload`.
struct ChunkOutput {
  std::string text;
  std::string payload;     // tool-defined bytes, handed to the consumer in order
  Counters counts;         // outcomes ("kept", "skipped: ...")
  uint64_t documents = 0;  // documents seen (valid or not)
  uint64_t bytes = 0;      // input bytes of those documents
  void clear() {  // keeps the buffers' capacity for the next chunk
    text.clear();
    payload.clear();
    counts.clear();
    documents = bytes = 0;
  }
};

struct ChunkStats {
  uint64_t documents = 0;
  uint64_t bytes = 0;
  Counters counts;
  void add(const ChunkOutput& out) {
    documents += out.documents;
    bytes += out.bytes;
    counts.merge(out.counts);
  }
  void add(const ChunkStats& other) {
    documents += other.documents;
    bytes += other.bytes;
    counts.merge(other.counts);
  }
};

template <class Chunk>
struct ChunkSource {
  std::function<bool(Chunk&)> next;                   // false: no more chunks (producer thread)
  std::function<uint64_t()> raw_bytes_read;           // for progress; any thread
  std::optional<uint64_t> total_raw_size;             // for the ETA, when known
};

template <class Chunk>
using ChunkWork = std::function<void(const Chunk&, ChunkOutput&)>;
template <class Chunk>
using MakeChunkWork = std::function<ChunkWork<Chunk>()>;  // once per worker: per-thread state
template <class Chunk>
using ConsumeChunkOutput = std::function<void(Chunk&, ChunkOutput&)>;

// Runs the chunks of `source` on options.threads workers; `consume` sees every output in input
// order. Prints progress (unless --quiet) and, with `print_summary`, the final summary line.
template <class Chunk>
ChunkStats run_ordered_chunks(const CommonOptions& options, const ChunkSource<Chunk>& source,
                              const MakeChunkWork<Chunk>& make_work, const ConsumeChunkOutput<Chunk>& consume,
                              bool print_summary = true) {
  Progress progress(options.quiet, source.total_raw_size);
  ChunkStats stats;
  OrderedPipeline<Chunk, ChunkOutput>::run(options.threads, source.next, make_work, [&](Chunk& chunk, ChunkOutput& out) {
    consume(chunk, out);
    stats.add(out);
    progress.update(stats.documents, stats.bytes, source.raw_bytes_read());
  });
  if (print_summary) progress.summary(stats.documents, stats.bytes, stats.counts);
  return stats;
}

}  // namespace suite
