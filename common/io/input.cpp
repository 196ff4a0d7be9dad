#include "common/io/input.h"

#include <bzlib.h>
#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "common/cli/error.h"

namespace suite {
namespace {

constexpr size_t kRawBuffer = 1 << 20;

std::mutex g_names_mutex;
std::map<std::string, std::string>& display_names() {
  static std::map<std::string, std::string> names;
  return names;
}

std::string display_name(const std::string& path) {
  if (path.empty() || path == "-") return "<stdin>";
  std::lock_guard<std::mutex> lock(g_names_mutex);
  auto it = display_names().find(path);
  return it == display_names().end() ? path : it->second;
}

// The file descriptor layer, with a small push-back area so that magic bytes can be peeked.
class FileInput final : public Input {
 public:
  explicit FileInput(const std::string& path) : name_(display_name(path)) {
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

// Shared shape of the decompressors: pull raw bytes from the file, push them through the codec.
// Between two streams (or frames) the next bytes must be another stream's magic or the end of the
// file; anything else is reported as trailing data, not as a corrupt or truncated stream.
class CodecInput : public Input {
 public:
  explicit CodecInput(std::unique_ptr<FileInput> file) : file_(std::move(file)), raw_(kRawBuffer) {}
  uint64_t raw_bytes_read() const override { return file_->raw_bytes_read(); }
  std::optional<uint64_t> raw_size() const override { return file_->raw_size(); }
  const std::string& name() const override { return file_->name(); }

 protected:
  // Refills the raw buffer once it is used up; returns false at the end of the file.
  bool refill() {
    raw_len_ = file_->read(raw_.data(), raw_.size());
    raw_pos_ = 0;
    if (raw_len_ == 0) eof_ = true;
    return raw_len_ > 0;
  }
  // Makes at least k unread raw bytes available from raw_pos_ (fewer only at the end of the file);
  // returns how many are available.
  size_t lookahead(size_t k) {
    size_t avail = raw_len_ - raw_pos_;
    if (avail >= k || eof_) return avail;
    std::memmove(raw_.data(), raw_.data() + raw_pos_, avail);
    raw_pos_ = 0;
    raw_len_ = avail;
    while (raw_len_ < k) {
      size_t got = file_->read(raw_.data() + raw_len_, raw_.size() - raw_len_);
      if (got == 0) {
        eof_ = true;
        break;
      }
      raw_len_ += got;
    }
    return raw_len_ - raw_pos_;
  }
  const char* next_raw() const { return raw_.data() + raw_pos_; }
  [[noreturn]] void truncated() const {
    throw ToolError(name(), std::string("truncated ") + format() + " stream (unexpected end of file)");
  }
  [[noreturn]] void corrupt(const std::string& what) const {
    throw ToolError(name(), std::string("corrupt ") + format() + " data: " + what);
  }
  [[noreturn]] void trailing() const {
    throw ToolError(name(), std::string("trailing data after the end of a complete ") + format() +
                                " stream (bytes that are not " + format() + " data follow it)");
  }

  std::unique_ptr<FileInput> file_;
  std::vector<char> raw_;
  size_t raw_len_ = 0;
  size_t raw_pos_ = 0;
  bool eof_ = false;
  bool done_ = false;  // the last stream ended exactly at the end of the file
};

bool is_zstd_frame(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  if (b[0] == 0x28 && b[1] == 0xB5 && b[2] == 0x2F && b[3] == 0xFD) return true;
  return (b[0] & 0xF0) == 0x50 && b[1] == 0x2A && b[2] == 0x4D && b[3] == 0x18;  // skippable frame
}

// Frames of any kind back to back; libzstd passes over skippable frames (pzstd writes one first).
class ZstdInput final : public CodecInput {
 public:
  explicit ZstdInput(std::unique_ptr<FileInput> file) : CodecInput(std::move(file)), ctx_(ZSTD_createDStream()) {
    ZSTD_initDStream(ctx_);
  }
  ~ZstdInput() override { ZSTD_freeDStream(ctx_); }
  const char* format() const override { return "zstd"; }

  size_t read(char* buf, size_t n) override {
    if (done_) return 0;
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (frame_done_) {
        size_t avail = lookahead(4);
        if (avail == 0) {
          done_ = true;
          return 0;
        }
        if (avail < 4 || !is_zstd_frame(next_raw())) trailing();
        frame_done_ = false;
      }
      if (raw_pos_ == raw_len_ && !refill()) truncated();
      ZSTD_inBuffer in{raw_.data(), raw_len_, raw_pos_};
      size_t ret = ZSTD_decompressStream(ctx_, &out, &in);
      raw_pos_ = in.pos;
      if (ZSTD_isError(ret)) corrupt(ZSTD_getErrorName(ret));
      // 0: a frame ended and is fully flushed; libzstd stops at the frame boundary.
      if (ret == 0) frame_done_ = true;
    }
    return out.pos;
  }

 private:
  ZSTD_DStream* ctx_;
  bool frame_done_ = false;  // the magic of the first frame was checked by open_input
};

constexpr char kXzMagic[6] = {'\xFD', '7', 'z', 'X', 'Z', '\0'};

// xz: streams back to back with optional zero padding between them; lzma-alone (.lzma): one stream.
class XzInput final : public CodecInput {
 public:
  XzInput(std::unique_ptr<FileInput> file, bool alone) : CodecInput(std::move(file)), alone_(alone) { start(); }
  ~XzInput() override { lzma_end(&strm_); }
  const char* format() const override { return alone_ ? "lzma" : "xz"; }

  size_t read(char* buf, size_t n) override {
    if (done_) return 0;
    strm_.next_out = reinterpret_cast<uint8_t*>(buf);
    strm_.avail_out = n;
    while (strm_.avail_out == n) {
      if (stream_done_) {
        if (!next_stream()) {
          done_ = true;
          break;
        }
      }
      if (raw_pos_ == raw_len_ && !eof_) refill();
      strm_.next_in = reinterpret_cast<const uint8_t*>(next_raw());
      strm_.avail_in = raw_len_ - raw_pos_;
      lzma_ret ret = lzma_code(&strm_, eof_ ? LZMA_FINISH : LZMA_RUN);
      raw_pos_ = reinterpret_cast<const char*>(strm_.next_in) - raw_.data();
      if (ret == LZMA_STREAM_END) {
        stream_done_ = true;
        continue;
      }
      if (ret == LZMA_BUF_ERROR && eof_) truncated();
      if (ret != LZMA_OK) corrupt("lzma error " + std::to_string(static_cast<int>(ret)));
    }
    return n - strm_.avail_out;
  }

 private:
  void start() {
    lzma_ret ret = alone_ ? lzma_alone_decoder(&strm_, UINT64_MAX) : lzma_stream_decoder(&strm_, UINT64_MAX, 0);
    if (ret != LZMA_OK) corrupt("cannot start decoder");
    stream_done_ = false;
  }
  // After a stream: the end of the file (true: no more data), or padding and another xz stream.
  bool next_stream() {
    size_t zeros = 0;
    while (!alone_ && lookahead(1) > 0 && *next_raw() == '\0') {
      ++raw_pos_;
      ++zeros;
    }
    size_t avail = lookahead(6);
    if (avail == 0 && zeros % 4 == 0) return false;
    if (alone_ || avail < 6 || std::memcmp(next_raw(), kXzMagic, 6) != 0) trailing();
    start();
    return true;
  }

  lzma_stream strm_ = LZMA_STREAM_INIT;
  bool alone_;
  bool stream_done_ = false;
};

bool is_bz2_stream(const char* p) { return std::memcmp(p, "BZh", 3) == 0 && p[3] >= '1' && p[3] <= '9'; }

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
    if (done_) return 0;
    strm_.next_out = buf;
    strm_.avail_out = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    size_t want = strm_.avail_out;
    while (strm_.avail_out == want) {
      if (!in_stream_) {
        size_t avail = lookahead(4);
        if (avail == 0) {
          done_ = true;
          break;
        }
        if (avail < 4 || !is_bz2_stream(next_raw())) trailing();
        restart_stream();
      }
      if (raw_pos_ == raw_len_ && !refill()) truncated();
      strm_.next_in = raw_.data() + raw_pos_;
      strm_.avail_in = static_cast<unsigned>(std::min<size_t>(raw_len_ - raw_pos_, 1u << 30));
      int ret = BZ2_bzDecompress(&strm_);
      raw_pos_ = static_cast<size_t>(strm_.next_in - raw_.data());
      if (ret == BZ_STREAM_END) {
        in_stream_ = false;
        continue;
      }
      if (ret != BZ_OK) corrupt("bzip2 error " + std::to_string(ret));
    }
    return want - strm_.avail_out;
  }

 private:
  // Starts a fresh decoder for the next stream, keeping the output position.
  void restart_stream() {
    bz_stream keep = strm_;
    BZ2_bzDecompressEnd(&strm_);
    std::memset(&strm_, 0, sizeof strm_);
    if (BZ2_bzDecompressInit(&strm_, 0, 0) != BZ_OK) corrupt("cannot restart decoder");
    strm_.next_out = keep.next_out;
    strm_.avail_out = keep.avail_out;
    in_stream_ = true;
  }

  bz_stream strm_;
  bool in_stream_ = true;
};

// gzip, with several members back to back as gzip -d reads them.
class GzipInput final : public CodecInput {
 public:
  explicit GzipInput(std::unique_ptr<FileInput> file) : CodecInput(std::move(file)) {
    std::memset(&strm_, 0, sizeof strm_);
    if (inflateInit2(&strm_, 16 + MAX_WBITS) != Z_OK) corrupt("cannot start decoder");
  }
  ~GzipInput() override { inflateEnd(&strm_); }
  const char* format() const override { return "gzip"; }

  size_t read(char* buf, size_t n) override {
    if (done_) return 0;
    strm_.next_out = reinterpret_cast<Bytef*>(buf);
    strm_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    size_t want = strm_.avail_out;
    while (strm_.avail_out == want) {
      if (member_done_) {
        size_t avail = lookahead(2);
        if (avail == 0) {
          done_ = true;
          break;
        }
        if (avail < 2 || std::memcmp(next_raw(), "\x1F\x8B", 2) != 0) trailing();
        inflateReset(&strm_);
        member_done_ = false;
      }
      if (raw_pos_ == raw_len_ && !refill()) truncated();
      strm_.next_in = reinterpret_cast<Bytef*>(raw_.data() + raw_pos_);
      strm_.avail_in = static_cast<uInt>(std::min<size_t>(raw_len_ - raw_pos_, 1u << 30));
      int ret = inflate(&strm_, Z_NO_FLUSH);
      raw_pos_ = static_cast<size_t>(reinterpret_cast<char*>(strm_.next_in) - raw_.data());
      if (ret == Z_STREAM_END) {
        member_done_ = true;
        continue;
      }
      if (ret != Z_OK && ret != Z_BUF_ERROR) corrupt(strm_.msg ? strm_.msg : "zlib error " + std::to_string(ret));
    }
    return want - strm_.avail_out;
  }

 private:
  z_stream strm_;
  bool member_done_ = false;
};

// .lzma (lzma-alone) has no magic: a properties byte (0x5D is what every encoder writes by default),
// a dictionary size of 2^n or 2^n + 2^(n-1), and an uncompressed size that is unknown (all ones) or
// below 256 GiB, the checks xz's own decoder applies.
bool is_lzma_alone(const std::string& head) {
  if (head.size() < 13 || static_cast<unsigned char>(head[0]) != 0x5D) return false;
  uint32_t dict = 0;
  std::memcpy(&dict, head.data() + 1, 4);
  uint64_t size = 0;
  std::memcpy(&size, head.data() + 5, 8);
  if (dict != UINT32_MAX) {
    uint32_t d = dict - 1;
    d |= d >> 2;
    d |= d >> 3;
    d |= d >> 4;
    d |= d >> 8;
    d |= d >> 16;
    if (++d != dict) return false;
  }
  return size == UINT64_MAX || size < (uint64_t{1} << 38);
}

// Formats we recognise but do not decode: refused by name instead of being read as text.
const char* unsupported_compression(const std::string& head) {
  auto starts = [&](std::string_view magic) { return head.size() >= magic.size() && head.compare(0, magic.size(), magic) == 0; };
  if (starts("\x04\x22\x4D\x18") || starts("\x02\x21\x4C\x18")) return "lz4";
  if (starts("LZIP")) return "lzip";
  if (starts("\x1F\x9D")) return "compress (.Z)";
  if (starts("PK\x03\x04")) return "zip";
  if (starts("7z\xBC\xAF\x27\x1C")) return "7-Zip";
  if (starts("\x89LZO")) return "lzop";
  return nullptr;
}

// The start of the decoded text: a UTF-8 byte-order mark is dropped (editors and some exporters
// write one); UTF-16 (a byte-order mark FF FE or FE FF) is refused, since every reader expects UTF-8.
class TextStartInput final : public Input {
 public:
  explicit TextStartInput(std::unique_ptr<Input> inner) : inner_(std::move(inner)) {}
  size_t read(char* buf, size_t n) override {
    if (!started_) start();
    if (pos_ < head_.size()) {
      size_t k = std::min(n, head_.size() - pos_);
      std::memcpy(buf, head_.data() + pos_, k);
      pos_ += k;
      return k < n ? k + inner_->read(buf + k, n - k) : k;
    }
    return inner_->read(buf, n);
  }
  uint64_t raw_bytes_read() const override { return inner_->raw_bytes_read(); }
  std::optional<uint64_t> raw_size() const override { return inner_->raw_size(); }
  const std::string& name() const override { return inner_->name(); }
  const char* format() const override { return inner_->format(); }

 private:
  void start() {
    started_ = true;
    head_.resize(3);
    size_t have = 0;
    while (have < 3) {
      size_t got = inner_->read(head_.data() + have, 3 - have);
      if (got == 0) break;
      have += got;
    }
    head_.resize(have);
    if (head_.starts_with("\xEF\xBB\xBF")) pos_ = 3;
    if (head_.starts_with("\xFF\xFE") || head_.starts_with("\xFE\xFF"))
      throw ToolError(name(), std::string("UTF-16 text (byte-order mark ") + (head_[0] == '\xFF' ? "FF FE" : "FE FF") +
                                  ") is not supported; convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)");
  }

  std::unique_ptr<Input> inner_;
  bool started_ = false;
  std::string head_;
  size_t pos_ = 0;
};

std::unique_ptr<Input> open_decoder(std::unique_ptr<FileInput> file) {
  std::string head = file->peek(13);
  auto starts = [&](std::string_view magic) { return head.size() >= magic.size() && head.compare(0, magic.size(), magic) == 0; };
  if (head.size() >= 4 && is_zstd_frame(head.data())) return std::make_unique<ZstdInput>(std::move(file));
  if (starts(std::string_view(kXzMagic, 6))) return std::make_unique<XzInput>(std::move(file), false);
  if (head.size() >= 4 && is_bz2_stream(head.data())) return std::make_unique<Bz2Input>(std::move(file));
  if (starts("\x1F\x8B")) return std::make_unique<GzipInput>(std::move(file));
  if (is_lzma_alone(head)) return std::make_unique<XzInput>(std::move(file), true);
  if (const char* other = unsupported_compression(head))
    throw ToolError(file->name(), std::string("is ") + other + "-compressed, which is not supported; decompress it first"
                                  " (zstd, xz, lzma, bzip2 and gzip are read directly)");
  return file;
}

}  // namespace

std::unique_ptr<Input> open_input(const std::string& path) {
  return with_text_start(open_decoder(std::make_unique<FileInput>(path)));
}

std::unique_ptr<Input> with_text_start(std::unique_ptr<Input> in) {
  return std::make_unique<TextStartInput>(std::move(in));
}

void set_input_display_name(const std::string& path, const std::string& name) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  display_names()[path] = name;
}

std::string read_all(const std::string& path) {
  auto in = open_input(path);
  std::string out;
  std::vector<char> buf(kRawBuffer);
  while (size_t got = in->read(buf.data(), buf.size())) out.append(buf.data(), got);
  return out;
}

}  // namespace suite
