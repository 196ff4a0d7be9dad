// The frame of every JSONL-reading tool: inputs -> chunks of lines -> N workers -> results in input
// order (common/parallel/chunk_runner.h), with the error policy and --shard handled once, here.
//
//   struct Upper : DocumentWorker {
//     void process(JsonLine& doc, const DocContext&, ChunkOutput& out) override { ... out.text += ...; }
//   };
//   auto stats = run_jsonl(options, [] { return std::make_unique<Upper>(); }, write_to(*output));
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/cli/options.h"
#include "common/io/output.h"
#include "common/jsonl/document_error.h"
#include "common/jsonl/json_line.h"
#include "common/parallel/chunk_runner.h"

namespace suite {

struct DocContext {
  std::string_view source;  // input name
  uint64_t line;            // 1-based line number in `source`
  uint32_t input = 0;       // index of `source` in options.inputs
};

class DocumentWorker {
 public:
  virtual ~DocumentWorker() = default;
  // One valid JSON object. Throw DocumentError for a document the tool cannot take.
  virtual void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) = 0;
  // After the last document of a chunk (for workers that batch).
  virtual void end_chunk(ChunkOutput& out) {}
};

using JsonlStats = ChunkStats;

using MakeDocumentWorker = std::function<std::unique_ptr<DocumentWorker>()>;
using ConsumeChunk = std::function<void(ChunkOutput&)>;

struct JsonlRunOptions {
  size_t chunk_bytes = 1 << 20;
  bool print_summary = true;
};

// Runs the chunk runner over options.inputs, or over this shard's part of them (options.shard,
// ShardPlan); `consume` sees each chunk's output in input order.
JsonlStats run_jsonl(const CommonOptions& options, const MakeDocumentWorker& make_worker, const ConsumeChunk& consume,
                     const JsonlRunOptions& run = {});

// A consumer that writes each chunk's text to `out`.
ConsumeChunk write_to(Output& out);

}  // namespace suite
