// Byte sinks: stdout or a file, compressed with zstd or xz when the file name ends in .zst / .xz.
// Files are written atomically (see atomic_file.h): nothing appears at the path until close().
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace suite {

class Output {
 public:
  virtual ~Output() = default;  // without close(), a file output is discarded
  virtual void write(const char* data, size_t n) = 0;
  void write(std::string_view s) { write(s.data(), s.size()); }
  // Flushes buffers and the compressor; for files, commits the temporary file into place.
  virtual void close() = 0;
  virtual const std::string& name() const = 0;
};

struct OutputOptions {
  int zstd_level = 3;
  int xz_preset = 6;
};

// "-" or "" is stdout (never compressed); other paths are files, compressed by extension.
std::unique_ptr<Output> open_output(const std::string& path, const OutputOptions& options = {});

// Writes a whole file atomically in one go (small outputs: vocabularies, reports).
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace suite
