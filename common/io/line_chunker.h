// Splits one or more inputs into chunks of whole lines, for the ordered parallel pipeline.
//
// Each chunk holds complete lines of a single input (a final line without '\n' gets one), followed
// by kChunkPadding zero bytes so that simdjson may read past the last line. Over-long lines either
// fail (`file:line: line longer than N bytes`) or are skipped without being held in memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/io/input.h"

namespace suite {

inline constexpr size_t kChunkPadding = 64;  // >= SIMDJSON_PADDING

struct LineChunk {
  std::string buf;            // lines, then kChunkPadding zero bytes
  size_t len = 0;             // bytes of lines (without the padding)
  std::string source;         // input name for messages
  uint32_t input = 0;         // index of `source` in the chunker's input list
  uint64_t first_line = 1;    // line number of the first line in `source`
  uint64_t line_count = 0;    // number of lines in this chunk
  std::vector<uint64_t> skipped_long_lines;  // line numbers of over-long lines dropped before this chunk
  std::string_view text() const { return {buf.data(), len}; }
};

class LineChunker {
 public:
  LineChunker(std::vector<std::string> inputs, size_t chunk_bytes, size_t max_line_bytes, bool skip_long_lines);

  // Fills `chunk` with the next lines; false once every input is exhausted.
  bool next(LineChunk& chunk);

  // Sum of the input files' sizes when all are regular files (for ETA).
  std::optional<uint64_t> total_raw_size() const { return total_raw_size_; }
  // Raw (compressed) bytes consumed so far over all inputs, as of the last next(); safe to read
  // from another thread than the one calling next().
  uint64_t raw_bytes_read() const { return raw_snapshot_.load(std::memory_order_relaxed); }

 private:
  bool open_next_input();
  size_t drop_long_line(LineChunk& chunk);

  std::vector<std::string> paths_;
  size_t next_path_ = 0;
  std::unique_ptr<Input> in_;
  uint64_t finished_raw_ = 0;
  std::atomic<uint64_t> raw_snapshot_{0};
  std::optional<uint64_t> total_raw_size_;
  size_t chunk_bytes_;
  size_t max_line_bytes_;
  bool skip_long_lines_;
  std::string carry_;     // the start of a line that the previous chunk did not complete
  uint64_t line_no_ = 1;  // number of the next line of the current input
  bool input_eof_ = true;
};

}  // namespace suite
