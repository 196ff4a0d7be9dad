#include "common/io/output.h"

#include <bzlib.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/cli/error.h"
#include "common/io/atomic_file.h"

namespace suite {
namespace {

constexpr size_t kBuffer = 1 << 20;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Where bytes finally go: stdout or an atomic file.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void put(const char* data, size_t n) = 0;
  virtual void finish() = 0;
};

class StdoutSink final : public Sink {
 public:
  void put(const char* data, size_t n) override {
    while (n > 0) {
      ssize_t w = ::write(1, data, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        // A closed pipe (e.g. `| head`) is not an error worth a message; stop quietly.
        if (errno == EPIPE) std::exit(kExitFailure);
        throw ToolError("<stdout>", std::string("write error: ") + std::strerror(errno));
      }
      data += w;
      n -= static_cast<size_t>(w);
    }
  }
  void finish() override {}
};

class FileSink final : public Sink {
 public:
  explicit FileSink(const std::string& path) : file_(path) {}
  void put(const char* data, size_t n) override { file_.write(data, n); }
  void finish() override { file_.commit(); }

 private:
  AtomicFile file_;
};

// Buffers writes and passes full buffers through an optional codec to the sink.
class BufferedOutput : public Output {
 public:
  BufferedOutput(std::string name, std::unique_ptr<Sink> sink) : name_(std::move(name)), sink_(std::move(sink)) {
    buf_.reserve(kBuffer);
  }
  void write(const char* data, size_t n) override {
    if (buf_.size() + n > kBuffer) {
      flush_buffer();
      if (n >= kBuffer) {
        encode(data, n);
        return;
      }
    }
    buf_.insert(buf_.end(), data, data + n);
  }
  void close() override {
    if (closed_) return;
    flush_buffer();
    finish_codec();
    sink_->finish();
    closed_ = true;
  }
  const std::string& name() const override { return name_; }

 protected:
  virtual void encode(const char* data, size_t n) { sink_->put(data, n); }
  virtual void finish_codec() {}
  void flush_buffer() {
    if (!buf_.empty()) encode(buf_.data(), buf_.size());
    buf_.clear();
  }
  // run(data, k) over pieces of at most 1 GiB: codecs whose input counts are 32-bit.
  template <class Run>
  static void in_pieces(const char* data, size_t n, Run run) {
    while (n > 0) {
      const size_t k = std::min<size_t>(n, 1u << 30);
      run(data, k);
      data += k;
      n -= k;
    }
  }

  std::string name_;
  std::unique_ptr<Sink> sink_;
  std::vector<char> buf_;
  bool closed_ = false;
};

class ZstdOutput final : public BufferedOutput {
 public:
  ZstdOutput(std::string name, std::unique_ptr<Sink> sink, int level)
      : BufferedOutput(std::move(name), std::move(sink)), ctx_(ZSTD_createCCtx()), out_(ZSTD_CStreamOutSize()) {
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_checksumFlag, 1);
  }
  ~ZstdOutput() override { ZSTD_freeCCtx(ctx_); }

 private:
  void encode(const char* data, size_t n) override { run(data, n, ZSTD_e_continue); }
  void finish_codec() override { run(nullptr, 0, ZSTD_e_end); }
  void run(const char* data, size_t n, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{data, n, 0};
    for (;;) {
      ZSTD_outBuffer out{out_.data(), out_.size(), 0};
      size_t left = ZSTD_compressStream2(ctx_, &out, &in, mode);
      if (ZSTD_isError(left)) throw ToolError(name_, std::string("zstd: ") + ZSTD_getErrorName(left));
      sink_->put(out_.data(), out.pos);
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) break;
    }
  }
  ZSTD_CCtx* ctx_;
  std::vector<char> out_;
};

class XzOutput final : public BufferedOutput {
 public:
  XzOutput(std::string name, std::unique_ptr<Sink> sink, int preset)
      : BufferedOutput(std::move(name), std::move(sink)), out_(kBuffer) {
    if (lzma_easy_encoder(&strm_, static_cast<uint32_t>(preset), LZMA_CHECK_CRC64) != LZMA_OK)
      throw ToolError(name_, "xz: cannot start encoder");
  }
  ~XzOutput() override { lzma_end(&strm_); }

 private:
  void encode(const char* data, size_t n) override { run(data, n, LZMA_RUN); }
  void finish_codec() override { run(nullptr, 0, LZMA_FINISH); }
  void run(const char* data, size_t n, lzma_action action) {
    strm_.next_in = reinterpret_cast<const uint8_t*>(data);
    strm_.avail_in = n;
    for (;;) {
      strm_.next_out = reinterpret_cast<uint8_t*>(out_.data());
      strm_.avail_out = out_.size();
      lzma_ret ret = lzma_code(&strm_, action);
      if (ret != LZMA_OK && ret != LZMA_STREAM_END) throw ToolError(name_, "xz: encoder error");
      sink_->put(out_.data(), out_.size() - strm_.avail_out);
      if (action == LZMA_FINISH ? ret == LZMA_STREAM_END : strm_.avail_in == 0) break;
    }
  }
  lzma_stream strm_ = LZMA_STREAM_INIT;
  std::vector<char> out_;
};

class GzipOutput final : public BufferedOutput {
 public:
  GzipOutput(std::string name, std::unique_ptr<Sink> sink, int level)
      : BufferedOutput(std::move(name), std::move(sink)), out_(kBuffer) {
    std::memset(&strm_, 0, sizeof strm_);
    if (deflateInit2(&strm_, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw ToolError(name_, "gzip: cannot start encoder");
  }
  ~GzipOutput() override { deflateEnd(&strm_); }

 private:
  void encode(const char* data, size_t n) override {
    in_pieces(data, n, [&](const char* piece, size_t k) { run(piece, k, Z_NO_FLUSH); });
  }
  void finish_codec() override { run(nullptr, 0, Z_FINISH); }
  void run(const char* data, size_t n, int flush) {
    strm_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    strm_.avail_in = static_cast<uInt>(n);
    for (;;) {
      strm_.next_out = reinterpret_cast<Bytef*>(out_.data());
      strm_.avail_out = static_cast<uInt>(out_.size());
      int ret = deflate(&strm_, flush);
      if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) throw ToolError(name_, "gzip: encoder error");
      sink_->put(out_.data(), out_.size() - strm_.avail_out);
      if (flush == Z_FINISH ? ret == Z_STREAM_END : strm_.avail_in == 0 && strm_.avail_out != 0) break;
    }
  }
  z_stream strm_;
  std::vector<char> out_;
};

class Bz2Output final : public BufferedOutput {
 public:
  Bz2Output(std::string name, std::unique_ptr<Sink> sink)
      : BufferedOutput(std::move(name), std::move(sink)), out_(kBuffer) {
    std::memset(&strm_, 0, sizeof strm_);
    if (BZ2_bzCompressInit(&strm_, 9, 0, 0) != BZ_OK) throw ToolError(name_, "bzip2: cannot start encoder");
  }
  ~Bz2Output() override { BZ2_bzCompressEnd(&strm_); }

 private:
  void encode(const char* data, size_t n) override {
    in_pieces(data, n, [&](const char* piece, size_t k) { run(piece, k, BZ_RUN); });
  }
  void finish_codec() override { run(nullptr, 0, BZ_FINISH); }
  void run(const char* data, size_t n, int action) {
    strm_.next_in = const_cast<char*>(data);
    strm_.avail_in = static_cast<unsigned>(n);
    for (;;) {
      strm_.next_out = out_.data();
      strm_.avail_out = static_cast<unsigned>(out_.size());
      int ret = BZ2_bzCompress(&strm_, action);
      if (ret != BZ_RUN_OK && ret != BZ_FINISH_OK && ret != BZ_STREAM_END)
        throw ToolError(name_, "bzip2: encoder error " + std::to_string(ret));
      sink_->put(out_.data(), out_.size() - strm_.avail_out);
      if (action == BZ_FINISH ? ret == BZ_STREAM_END : strm_.avail_in == 0) break;
    }
  }
  bz_stream strm_;
  std::vector<char> out_;
};

// Suffixes of compressed formats we cannot write: refused rather than filled with plain text.
const char* unwritable_suffix(const std::string& path) {
  for (const char* suffix : {".lz4", ".lzma", ".lz", ".Z", ".zip", ".7z", ".br", ".lzo", ".tgz", ".sz"})
    if (ends_with(path, suffix)) return suffix;
  return nullptr;
}

}  // namespace

void check_output_path(const std::string& path, const std::string& flag) {
  if (path.empty() || path == "-") return;
  if (const char* suffix = unwritable_suffix(path))
    throw UsageError(flag + " " + path + ": cannot write " + suffix +
                     " files (compressed output is written for .zst, .xz, .gz and .bz2)");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw UsageError(flag + " " + path + ": is a directory (give a file name)");
  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    std::string dir = path.substr(0, slash);
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw UsageError(flag + " " + path + ": the folder " + dir + " does not exist");
  }
}

std::unique_ptr<Output> open_output(const std::string& path, const OutputOptions& options) {
  if (path.empty() || path == "-") return std::make_unique<BufferedOutput>("<stdout>", std::make_unique<StdoutSink>());
  check_output_path(path);
  auto sink = std::make_unique<FileSink>(path);
  if (ends_with(path, ".zst")) return std::make_unique<ZstdOutput>(path, std::move(sink), options.zstd_level);
  if (ends_with(path, ".xz")) return std::make_unique<XzOutput>(path, std::move(sink), options.xz_preset);
  if (ends_with(path, ".gz")) return std::make_unique<GzipOutput>(path, std::move(sink), Z_DEFAULT_COMPRESSION);
  if (ends_with(path, ".bz2")) return std::make_unique<Bz2Output>(path, std::move(sink));
  return std::make_unique<BufferedOutput>(path, std::move(sink));
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicFile file(path);
  file.write(contents.data(), contents.size());
  file.commit();
}

}  // namespace suite
