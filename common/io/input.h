// Byte sources: a file or stdin, plain, zstd, xz, lzma, bzip2 or gzip, detected by magic bytes (never
// by name). Other known compression magics are refused by name rather than read as text; data after
// the last complete compressed stream is an error; a UTF-8 byte-order mark at the start of the text is
// skipped and UTF-16 is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace suite {

class Input {
 public:
  virtual ~Input() = default;
  // Reads up to n decompressed bytes; returns 0 only at the end of the stream.
  // Throws ToolError naming the file on read errors and truncated or corrupt compressed data.
  virtual size_t read(char* buf, size_t n) = 0;
  // Bytes consumed from the underlying file so far (compressed bytes for compressed input).
  virtual uint64_t raw_bytes_read() const = 0;
  // Size of the underlying file when it is a regular file (for ETA), else nullopt.
  virtual std::optional<uint64_t> raw_size() const = 0;
  // The name used in messages: the path, or "<stdin>".
  virtual const std::string& name() const = 0;
  // "plain", "zstd", "xz", "lzma", "bzip2" or "gzip".
  virtual const char* format() const = 0;
};

// Opens a path ("-" or "" is stdin) and wraps it in the decompressor its first bytes announce.
std::unique_ptr<Input> open_input(const std::string& path);

// Applies the text-start rules above (byte-order marks) to a decoded byte stream.
std::unique_ptr<Input> with_text_start(std::unique_ptr<Input> in);

// Messages about inputs opened from `path` name them `name` instead: a spill file of stdin (a
// /proc/self/fd path) is "<stdin>" to the user.
void set_input_display_name(const std::string& path, const std::string& name);

// Reads a whole (possibly compressed) input into memory; for small files such as vocabularies.
std::string read_all(const std::string& path);

}  // namespace suite
