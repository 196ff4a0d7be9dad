// The frame of every JSONL-reading tool: inputs -> chunks of lines -> N workers -> results in input
// order, with the error policy, progress lines and the final summary handled once, here.
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
#include "common/progress/counters.h"

namespace suite {

struct DocContext {
  std::string_view source;  // input name
  uint64_t line;            // 1-based line number in `source`
};

// What one chunk of input produced. `text` is what goes to the output; tools that write something
// else (token ids for a dataset, word counts) keep it in their own worker state or in `payload`.
struct ChunkOutput {
  std::string text;
  std::string payload;     // tool-defined bytes, handed to the consumer in order
  Counters counts;         // outcomes ("kept", "skipped: ...")
  uint64_t documents = 0;  // JSON lines seen (valid or not)
  uint64_t bytes = 0;      // input bytes of those lines
  void clear() {  // keeps the buffers' capacity for the next chunk
    text.clear();
    payload.clear();
    counts.clear();
    documents = bytes = 0;
  }
};

class DocumentWorker {
 public:
  virtual ~DocumentWorker() = default;
  // One valid JSON object. Throw DocumentError for a document the tool cannot take.
  virtual void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) = 0;
  // After the last document of a chunk (for workers that batch).
  virtual void end_chunk(ChunkOutput& out) {}
};

struct JsonlStats {
  uint64_t documents = 0;
  uint64_t bytes = 0;
  Counters counts;
};

using MakeDocumentWorker = std::function<std::unique_ptr<DocumentWorker>()>;
using ConsumeChunk = std::function<void(ChunkOutput&)>;

struct JsonlRunOptions {
  size_t chunk_bytes = 1 << 20;
  bool print_summary = true;
};

// Runs the pipeline over options.inputs; `consume` sees each chunk's output in input order.
JsonlStats run_jsonl(const CommonOptions& options, const MakeDocumentWorker& make_worker, const ConsumeChunk& consume,
                     const JsonlRunOptions& run = {});

// A consumer that writes each chunk's text to `out`.
ConsumeChunk write_to(Output& out);

}  // namespace suite
