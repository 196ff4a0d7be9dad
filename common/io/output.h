// Byte sinks: stdout or a file, compressed with zstd, xz, gzip or bzip2 when the file name ends in
// .zst / .xz / .gz / .bz2; other compression suffixes are refused.
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
// Throws UsageError for a path that cannot become the output: a suffix of a compressed format we do
// not write, an existing directory, or a missing folder. open_output() checks it too; call it early
// where the output is opened only after the work.
std::unique_ptr<Output> open_output(const std::string& path, const OutputOptions& options = {});
void check_output_path(const std::string& path, const std::string& flag = "-o");

// Writes a whole file atomically in one go (small outputs: vocabularies, reports).
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace suite
