#include "common/jsonl/jsonl_runner.h"

#include <cstring>

#include "common/cli/error.h"
#include "common/io/line_chunker.h"
#include "common/unicode/utf8.h"

namespace suite {
namespace {

// Applies the --on-error policy to one problem: throw (fail) or count it (skip).
void on_problem(OnError policy, const DocContext& where, const std::string& reason, const std::string& message,
                ChunkOutput& out) {
  if (policy == OnError::kFail) throw ToolError(location(where.source, where.line), message);
  out.counts.add("skipped: " + reason);
}

// A line without its '\r'; blank lines hold no document.
std::string_view strip_cr(std::string_view raw) {
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  return raw;
}
bool is_blank(std::string_view raw) { return raw.find_first_not_of(" \t") == std::string_view::npos; }

// Lines of one input, and (sharding by document) the index of the chunk's first document over all
// inputs: over-long lines dropped before the chunk come first, then its non-blank lines.
struct JsonlChunk {
  LineChunk lines;
  uint64_t first_document = 0;
};

uint64_t count_documents(const LineChunk& chunk) {
  uint64_t n = chunk.skipped_long_lines.size();
  std::string_view text = chunk.text();
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    n += !is_blank(strip_cr(text.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return n;
}

int hex4(std::string_view s, size_t i) {  // value of the 4 hex digits at s[i..i+4), or -1
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    const char c = s[k];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// Escapes \uD800-\uDFFF that are not a high-low pair (JSON allows them, UTF-8 cannot hold them;
// simdjson rejects them): each is rewritten in place as \ufffd, of the same length. Returns how many.
size_t replace_lone_surrogates(std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] != '\\') continue;
    if (s[i + 1] != 'u') {
      ++i;  // an escaped character: "\\u..." is no escape of u
      continue;
    }
    const int v = hex4(s, i + 2);
    if (v >= 0xD800 && v <= 0xDBFF && i + 7 < s.size() && s[i + 6] == '\\' && s[i + 7] == 'u') {
      const int lo = hex4(s, i + 8);
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        i += 11;  // a proper pair
        continue;
      }
    }
    if (v >= 0xD800 && v <= 0xDFFF) {
      s.replace(i + 2, 4, "fffd");
      ++n;
    }
    i += 5;
  }
  return n;
}

class LineProcessor {
 public:
  LineProcessor(OnError policy, uint64_t max_line_bytes, const ShardPlan& plan, std::unique_ptr<DocumentWorker> worker)
      : policy_(policy), max_line_bytes_(max_line_bytes), plan_(plan), worker_(std::move(worker)) {}

  void process_chunk(const JsonlChunk& task, ChunkOutput& out) {
    const LineChunk& chunk = task.lines;
    uint64_t document = task.first_document;
    uint64_t skipped = 0;
    for (size_t i = 0; i < chunk.skipped_long_lines.size(); ++i) skipped += plan_.keeps(document++);
    if (skipped) {
      out.documents += skipped;
      out.counts.add("skipped: line too long", skipped);
    }
    std::string_view text = chunk.text();
    uint64_t line = chunk.first_line;
    const uint32_t input = plan_.inputs[chunk.input];
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view raw = strip_cr(text.substr(pos, nl - pos));
      pos = nl + 1;
      DocContext where{chunk.source, line++, input};
      if (is_blank(raw) || !plan_.keeps(document++)) continue;
      ++out.documents;
      out.bytes += raw.size() + 1;
      process_line(raw, where, out);
    }
    worker_->end_chunk(out);
  }

 private:
  void process_line(std::string_view raw, const DocContext& where, ChunkOutput& out) {
    // The chunker catches lines longer than a chunk; shorter over-long lines are caught here.
    if (raw.size() > max_line_bytes_) {
      on_problem(policy_, where, "line too long",
                 "line longer than " + std::to_string(max_line_bytes_) + " bytes (raise --max-line-bytes)", out);
      return;
    }
    JsonLineError err = json_.parse(raw);
    if (err == JsonLineError::kInvalidUtf8 && policy_ == OnError::kReplace) {
      // Repair into a padded buffer of our own and parse again.
      repaired_ = unicode::utf8_repair(raw);
      size_t n = repaired_.size();
      repaired_.append(kChunkPadding, '\0');
      err = json_.parse(std::string_view(repaired_.data(), n));
      if (err == JsonLineError::kNone) out.counts.add("replaced: invalid UTF-8");
    }
    if (err == JsonLineError::kInvalidJson && raw.find("\\u") != std::string_view::npos) {
      // An escaped lone surrogate: U+FFFD with replace, and a message that names it otherwise.
      std::string fixed(json_.line());
      if (size_t n = replace_lone_surrogates(fixed)) {
        if (policy_ != OnError::kReplace) {
          on_problem(policy_, where, "lone surrogate",
                     "invalid JSON: an escaped lone surrogate (\\uD800-\\uDFFF without its pair; --on-error "
                     "replace makes it U+FFFD)", out);
          return;
        }
        surrogates_ = std::move(fixed);
        const size_t len = surrogates_.size();
        surrogates_.append(kChunkPadding, '\0');
        err = json_.parse(std::string_view(surrogates_.data(), len));
        if (err == JsonLineError::kNone) out.counts.add("replaced: lone surrogate", n);
      }
    }
    if (err != JsonLineError::kNone) {
      const char* reason = err == JsonLineError::kInvalidUtf8 ? "invalid UTF-8"
                           : err == JsonLineError::kNotAnObject ? "not a JSON object"
                                                                : "invalid JSON";
      on_problem(policy_, where, reason, json_.error_message(), out);
      return;
    }
    size_t text_mark = out.text.size();
    size_t payload_mark = out.payload.size();
    try {
      worker_->process(json_, where, out);
    } catch (const DocumentError& e) {
      // Drop whatever the worker wrote for this document before it gave up.
      out.text.resize(text_mark);
      out.payload.resize(payload_mark);
      on_problem(policy_, where, e.reason(), e.what(), out);
    }
  }

  OnError policy_;
  uint64_t max_line_bytes_;
  const ShardPlan& plan_;
  std::unique_ptr<DocumentWorker> worker_;
  JsonLine json_;
  std::string repaired_;
  std::string surrogates_;
};

}  // namespace

JsonlStats run_jsonl(const CommonOptions& options, const MakeDocumentWorker& make_worker, const ConsumeChunk& consume,
                     const JsonlRunOptions& run) {
  const ShardPlan plan = plan_shard(options.shard, options.inputs.size());
  std::vector<std::string> inputs;
  for (uint32_t f : plan.inputs) inputs.push_back(options.inputs.empty() ? "-" : options.inputs[f]);
  LineChunker chunker(inputs, run.chunk_bytes, options.max_line_bytes, options.on_error != OnError::kFail);
  uint64_t next_document = 0;
  ChunkSource<JsonlChunk> source{
      [&](JsonlChunk& task) {
        if (!chunker.next(task.lines)) return false;
        task.first_document = next_document;
        if (plan.by_document) next_document += count_documents(task.lines);
        return true;
      },
      [&] { return chunker.raw_bytes_read(); }, chunker.total_raw_size()};
  return run_ordered_chunks<JsonlChunk>(
      options, source,
      [&]() -> ChunkWork<JsonlChunk> {
        auto processor =
            std::make_shared<LineProcessor>(options.on_error, options.max_line_bytes, plan, make_worker());
        return [processor](const JsonlChunk& chunk, ChunkOutput& out) { processor->process_chunk(chunk, out); };
      },
      [&](JsonlChunk&, ChunkOutput& out) { consume(out); }, run.print_summary);
}

ConsumeChunk write_to(Output& out) {
  return [&out](ChunkOutput& chunk) { out.write(chunk.text); };
}

}  // namespace suite
