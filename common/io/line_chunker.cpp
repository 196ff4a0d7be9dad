#include "common/io/line_chunker.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "common/cli/error.h"

namespace suite {

LineChunker::LineChunker(std::vector<std::string> inputs, size_t chunk_bytes, size_t max_line_bytes,
                         bool skip_long_lines)
    : paths_(std::move(inputs)),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 4096)),
      max_line_bytes_(max_line_bytes),
      skip_long_lines_(skip_long_lines) {
  if (paths_.empty()) paths_.push_back("-");
  uint64_t total = 0;
  bool known = true;
  for (const auto& p : paths_) {
    struct stat st {};
    if (p == "-" || ::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      known = false;
      break;
    }
    total += static_cast<uint64_t>(st.st_size);
  }
  if (known) total_raw_size_ = total;
}

bool LineChunker::open_next_input() {
  if (in_) finished_raw_ += in_->raw_bytes_read();
  in_.reset();
  if (next_path_ == paths_.size()) return false;
  in_ = open_input(paths_[next_path_++]);
  input_eof_ = false;
  line_no_ = 1;
  carry_.clear();
  return true;
}

bool LineChunker::next(LineChunk& chunk) {
  chunk.skipped_long_lines.clear();
  std::string& buf = chunk.buf;
  for (;;) {
    if (input_eof_ && carry_.empty() && !open_next_input()) return false;
    chunk.source = in_->name();
    chunk.input = static_cast<uint32_t>(next_path_ - 1);
    chunk.first_line = line_no_;
    buf.resize(std::max(buf.size(), carry_.size() + chunk_bytes_ + kChunkPadding));
    std::memcpy(buf.data(), carry_.data(), carry_.size());
    size_t have = carry_.size();  // the carried tail holds no '\n'
    carry_.clear();
    size_t last_nl = std::string::npos;
    while (!input_eof_) {
      if (last_nl != std::string::npos && have >= chunk_bytes_) break;
      if (last_nl == std::string::npos && have > max_line_bytes_) {
        have = drop_long_line(chunk);
        const void* p = have ? memrchr(buf.data(), '\n', have) : nullptr;
        last_nl = p ? static_cast<const char*>(p) - buf.data() : std::string::npos;
        continue;
      }
      if (buf.size() - kChunkPadding - have < chunk_bytes_ / 4)
        buf.resize(std::max(buf.size() * 2, have + chunk_bytes_ + kChunkPadding));
      size_t got = in_->read(buf.data() + have, buf.size() - kChunkPadding - have);
      if (got == 0) {
        input_eof_ = true;
        break;
      }
      if (const void* p = memrchr(buf.data() + have, '\n', got)) last_nl = static_cast<const char*>(p) - buf.data();
      have += got;
    }
    size_t end;
    if (input_eof_) {
      end = have;
      if (end > 0 && buf[end - 1] != '\n') {
        if (buf.size() < end + 1 + kChunkPadding) buf.resize(end + 1 + kChunkPadding);
        buf[end++] = '\n';
      }
    } else {
      end = last_nl + 1;
      carry_.assign(buf.data() + end, have - end);
    }
    chunk.len = end;
    std::memset(buf.data() + end, 0, kChunkPadding);
    chunk.line_count = static_cast<uint64_t>(std::count(buf.data(), buf.data() + end, '\n'));
    line_no_ += chunk.line_count;
    raw_snapshot_.store(finished_raw_ + in_->raw_bytes_read(), std::memory_order_relaxed);
    if (end == 0 && chunk.skipped_long_lines.empty()) continue;  // an empty input: go on to the next
    return true;
  }
}

// The bytes in the chunk's buffer are the start of one over-long line: fail, or read on to its
// end without keeping it. Returns how many bytes after that line's newline are left in the buffer.
size_t LineChunker::drop_long_line(LineChunk& chunk) {
  if (!skip_long_lines_)
    throw ToolError(location(in_->name(), line_no_),
                    "line longer than " + std::to_string(max_line_bytes_) + " bytes (raise --max-line-bytes)");
  chunk.skipped_long_lines.push_back(line_no_);
  std::string& buf = chunk.buf;
  ++line_no_;
  chunk.first_line = line_no_;
  for (;;) {
    size_t got = in_->read(buf.data(), buf.size() - kChunkPadding);
    if (got == 0) {
      input_eof_ = true;
      return 0;
    }
    if (const void* p = memchr(buf.data(), '\n', got)) {
      size_t after = static_cast<const char*>(p) - buf.data() + 1;
      std::memmove(buf.data(), buf.data() + after, got - after);
      return got - after;
    }
  }
}

}  // namespace suite
