#include "common/io/input.h"

#include <bzlib.h>
#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/cli/error.h"

namespace suite {
namespace {

constexpr size_t kRawBuffer = 1 << 20;

// The file descriptor layer, with a small push-back area so that magic bytes can be peeked.
class FileInput final : public Input {
 public:
  explicit FileInput(const std::string& path) : name_(path.empty() || path == "-" ? "<stdin>" : path) {
    if (path.empty() || path == "-") {
      fd_ = 0;
    } else {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw ToolError(name_, std::string("cannot open: ") + std::strerror(errno));
      owns_ = true;
    }
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) size_ = static_cast<uint64_t>(st.st_size);
    if (size_) ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~FileInput() override {
    if (owns_) ::close(fd_);
  }

  size_t read(char* buf, size_t n) override {
    if (pos_ < pushed_.size()) {
      size_t k = std::min(n, pushed_.size() - pos_);
      std::memcpy(buf, pushed_.data() + pos_, k);
      pos_ += k;
      return k;
    }
    for (;;) {
      ssize_t got = ::read(fd_, buf, n);
      if (got >= 0) {
        read_ += static_cast<uint64_t>(got);
        return static_cast<size_t>(got);
      }
      if (errno == EINTR) continue;
      if (errno == EISDIR) throw ToolError(name_, "is a directory");
      throw ToolError(name_, std::string("read error: ") + std::strerror(errno));
    }
  }

  // Reads up to n bytes into `out` and arranges for them to be read again.
  std::string peek(size_t n) {
    std::string head(n, '\0');
    size_t have = 0;
    while (have < n) {
      size_t got = read(head.data() + have, n - have);
      if (got == 0) break;
      have += got;
    }
    head.resize(have);
    pushed_ = head;
    pos_ = 0;
    return head;
  }

  uint64_t raw_bytes_read() const override { return read_; }
  std::optional<uint64_t> raw_size() const override { return size_; }
  const std::string& name() const override { return name_; }
  const char* format() const override { return "plain"; }

 private:
  std::string name_;
  int fd_ = -1;
  bool owns_ = false;
  std::optional<uint64_t> size_;
  uint64_t read_ = 0;
  std::string pushed_;
  size_t pos_ = 0;
};

// Shared shape of the three decompressors: pull raw bytes from the file, push them through the codec.
class CodecInput : public Input {
 public:
  explicit CodecInput(std::unique_ptr<FileInput> file) : file_(std::move(file)), raw_(kRawBuffer) {}
  uint64_t raw_bytes_read() const override { return file_->raw_bytes_read(); }
  std::optional<uint64_t> raw_size() const override { return file_->raw_size(); }
  const std::string& name() const override { return file_->name(); }

 protected:
  // Refills the raw buffer; returns false at the end of the file.
  bool refill() {
    raw_len_ = file_->read(raw_.data(), raw_.size());
    raw_pos_ = 0;
    return raw_len_ > 0;
  }
  [[noreturn]] void truncated() const {
    throw ToolError(name(), std::string("truncated ") + format() + " stream (unexpected end of file)");
  }
  [[noreturn]] void corrupt(const std::string& what) const {
    throw ToolError(name(), std::string("corrupt ") + format() + " data: " + what);
  }

  std::unique_ptr<FileInput> file_;
  std::vector<char> raw_;
  size_t raw_len_ = 0;
  size_t raw_pos_ = 0;
  bool eof_ = false;
};

class ZstdInput final : public CodecInput {
 public:
  explicit ZstdInput(std::unique_ptr<FileInput> file) : CodecInput(std::move(file)), ctx_(ZSTD_createDStream()) {
    ZSTD_initDStream(ctx_);
  }
  ~ZstdInput() override { ZSTD_freeDStream(ctx_); }
  const char* format() const override { return "zstd"; }

  size_t read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (raw_pos_ == raw_len_) {
        if (eof_ || !refill()) {
          eof_ = true;
          // A frame still open (last_ret_ != 0) at end of input means the stream was cut short.
          if (last_ret_ != 0) truncated();
          return 0;
        }
      }
      ZSTD_inBuffer in{raw_.data(), raw_len_, raw_pos_};
      size_t ret = ZSTD_decompressStream(ctx_, &out, &in);
      raw_pos_ = in.pos;
      if (ZSTD_isError(ret)) corrupt(ZSTD_getErrorName(ret));
      last_ret_ = ret;
    }
    return out.pos;
  }

 private:
  ZSTD_DStream* ctx_;
  size_t last_ret_ = 1;  // nonzero until the first frame is complete
};

class XzInput final : public CodecInput {
 public:
  explicit XzInput(std::unique_ptr<FileInput> file) : CodecInput(std::move(file)) {
    if (lzma_stream_decoder(&strm_, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) corrupt("cannot start decoder");
  }
  ~XzInput() override { lzma_end(&strm_); }
  const char* format() const override { return "xz"; }

  size_t read(char* buf, size_t n) override {
    if (done_) return 0;
    strm_.next_out = reinterpret_cast<uint8_t*>(buf);
    strm_.avail_out = n;
    while (strm_.avail_out == n) {
      lzma_action action = LZMA_RUN;
      if (strm_.avail_in == 0) {
        if (!eof_ && refill()) {
          strm_.next_in = reinterpret_cast<const uint8_t*>(raw_.data());
          strm_.avail_in = raw_len_;
        } else {
          eof_ = true;
          action = LZMA_FINISH;
        }
      }
      lzma_ret ret = lzma_code(&strm_, action);
      if (ret == LZMA_STREAM_END) {
        done_ = true;
        break;
      }
      if (ret == LZMA_BUF_ERROR && eof_) truncated();
      if (ret != LZMA_OK) corrupt("lzma error " + std::to_string(static_cast<int>(ret)));
    }
    return n - strm_.avail_out;
  }

 private:
  lzma_stream strm_ = LZMA_STREAM_INIT;
  bool done_ = false;
};

class Bz2Input final : public CodecInput {
 public:
  explicit Bz2Input(std::unique_ptr<FileInput> file) : CodecInput(std::move(file)) {
    std::memset(&strm_, 0, sizeof strm_);
    if (BZ2_bzDecompressInit(&strm_, 0, 0) != BZ_OK) corrupt("cannot start decoder");
  }
  ~Bz2Input() override { BZ2_bzDecompressEnd(&strm_); }
  const char* format() const override { return "bzip2"; }

  // Multistream dumps are several bzip2 streams back to back: restart the decoder after each end.
  size_t read(char* buf, size_t n) override {
    strm_.next_out = buf;
    strm_.avail_out = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    size_t want = strm_.avail_out;
    while (strm_.avail_out == want) {
      if (strm_.avail_in == 0) {
        if (eof_ || !refill()) {
          eof_ = true;
          if (in_stream_) truncated();
          return 0;
        }
        strm_.next_in = raw_.data();
        strm_.avail_in = static_cast<unsigned>(raw_len_);
      }
      if (!in_stream_) restart_stream();
      int ret = BZ2_bzDecompress(&strm_);
      if (ret == BZ_STREAM_END) {
        in_stream_ = false;
        continue;
      }
      if (ret != BZ_OK) corrupt("bzip2 error " + std::to_string(ret));
    }
    return want - strm_.avail_out;
  }

 private:
  // Starts a fresh decoder for the next stream, keeping the pending input and output positions.
  void restart_stream() {
    bz_stream keep = strm_;
    BZ2_bzDecompressEnd(&strm_);
    std::memset(&strm_, 0, sizeof strm_);
    if (BZ2_bzDecompressInit(&strm_, 0, 0) != BZ_OK) corrupt("cannot restart decoder");
    strm_.next_in = keep.next_in;
    strm_.avail_in = keep.avail_in;
    strm_.next_out = keep.next_out;
    strm_.avail_out = keep.avail_out;
    in_stream_ = true;
  }

  bz_stream strm_;
  bool in_stream_ = true;
};

}  // namespace

std::unique_ptr<Input> open_input(const std::string& path) {
  auto file = std::make_unique<FileInput>(path);
  std::string head = file->peek(6);
  auto starts = [&](const char* magic, size_t n) { return head.size() >= n && std::memcmp(head.data(), magic, n) == 0; };
  if (starts("\x28\xB5\x2F\xFD", 4)) return std::make_unique<ZstdInput>(std::move(file));
  if (starts("\xFD" "7zXZ\x00", 6)) return std::make_unique<XzInput>(std::move(file));
  if (starts("BZh", 3) && head.size() >= 4 && head[3] >= '1' && head[3] <= '9') return std::make_unique<Bz2Input>(std::move(file));
  return file;
}

std::string read_all(const std::string& path) {
  auto in = open_input(path);
  std::string out;
  std::vector<char> buf(kRawBuffer);
  while (size_t got = in->read(buf.data(), buf.size())) out.append(buf.data(), got);
  return out;
}

}  // namespace suite
