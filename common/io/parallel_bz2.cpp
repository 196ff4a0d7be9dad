#include "common/io/parallel_bz2.h"

#include <bzlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/cli/error.h"

namespace suite {
namespace {

constexpr size_t kSegmentBytes = 1 << 20;        // compressed bytes per task (about 100 pages of a dump)
constexpr size_t kReadBytes = 4 << 20;           // compressed bytes per read()
constexpr size_t kProbeBytes = 16 << 20;         // where a second stream must start to go parallel
constexpr size_t kMaxSegmentBytes = 256ull << 20;  // one stream larger than this is refused

// "BZh" + '1'..'9' + the block magic (pi) or the end-of-stream magic (sqrt(pi)) at p (10 bytes readable).
bool stream_start(const char* p) {
  static constexpr unsigned char kBlock[6] = {0x31, 0x41, 0x59, 0x26, 0x53, 0x59};
  static constexpr unsigned char kEnd[6] = {0x17, 0x72, 0x45, 0x38, 0x50, 0x90};
  return p[0] == 'B' && p[1] == 'Z' && p[2] == 'h' && p[3] >= '1' && p[3] <= '9' &&
         (std::memcmp(p + 4, kBlock, 6) == 0 || std::memcmp(p + 4, kEnd, 6) == 0);
}

// Offset of the first stream start in [from, data.size() - 10], or npos.
size_t find_stream_start(std::string_view data, size_t from) {
  while (from + 10 <= data.size()) {
    size_t hit = data.find("BZh", from);
    if (hit == std::string_view::npos || hit + 10 > data.size()) return std::string_view::npos;
    if (stream_start(data.data() + hit)) return hit;
    from = hit + 1;
  }
  return std::string_view::npos;
}

struct Segment {
  std::string compressed;
  std::string plain;
  uint64_t raw_end = 0;  // file offset after this segment
  bool last = false;
  bool ready = false;
  std::exception_ptr error;
};

class ParallelBz2Input final : public Input {
 public:
  ParallelBz2Input(int fd, std::string name, uint64_t size, std::string head, int threads)
      : fd_(fd), name_(std::move(name)), size_(size), pending_(std::move(head)), max_in_flight_(2 * threads + 2) {
    raw_offset_ = pending_.size();
    reader_ = std::thread([this] { reader_loop(); });
    for (int i = 0; i < threads; ++i) decoders_.emplace_back([this] { decoder_loop(); });
  }
  ~ParallelBz2Input() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    reader_.join();
    for (auto& t : decoders_) t.join();
    ::close(fd_);
  }

  size_t read(char* buf, size_t n) override {
    while (current_ == nullptr || current_pos_ == current_->plain.size()) {
      if (current_ != nullptr) {
        raw_read_.store(current_->raw_end, std::memory_order_relaxed);
        std::lock_guard<std::mutex> lock(mu_);
        order_.pop_front();
        current_ = nullptr;
        cv_.notify_all();
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return (!order_.empty() && order_.front()->ready) || (order_.empty() && done_); });
      if (order_.empty()) return 0;
      current_ = order_.front().get();
      current_pos_ = 0;
      if (current_->error) std::rethrow_exception(current_->error);
    }
    size_t k = std::min(n, current_->plain.size() - current_pos_);
    std::memcpy(buf, current_->plain.data() + current_pos_, k);
    current_pos_ += k;
    return k;
  }
  uint64_t raw_bytes_read() const override { return raw_read_.load(std::memory_order_relaxed); }
  std::optional<uint64_t> raw_size() const override { return size_; }
  const std::string& name() const override { return name_; }
  const char* format() const override { return "bzip2"; }

 private:
  // Appends up to kReadBytes from the file to pending_; false at the end of the file.
  bool read_more() {
    size_t old = pending_.size();
    pending_.resize(old + kReadBytes);
    for (;;) {
      ssize_t got = ::read(fd_, pending_.data() + old, kReadBytes);
      if (got >= 0) {
        pending_.resize(old + static_cast<size_t>(got));
        raw_offset_ += static_cast<uint64_t>(got);
        return got > 0;
      }
      if (errno != EINTR) throw ToolError(name_, std::string("read error: ") + std::strerror(errno));
    }
  }

  // Cuts the next segment (whole streams, at least kSegmentBytes unless the file ends) off pending_.
  bool next_segment(Segment& seg) {
    if (pending_.empty() && eof_) return false;
    size_t from = kSegmentBytes;
    for (;;) {
      size_t cut = find_stream_start(pending_, std::min(from, pending_.size()));
      if (cut != std::string::npos && cut > 0) {
        seg.compressed.assign(pending_, 0, cut);
        pending_.erase(0, cut);
        seg.raw_end = raw_offset_ - pending_.size();
        return true;
      }
      if (eof_ || !read_more()) {
        eof_ = true;
        seg.compressed = std::move(pending_);
        pending_.clear();
        seg.raw_end = raw_offset_;
        seg.last = true;
        return !seg.compressed.empty();
      }
      if (pending_.size() > kMaxSegmentBytes)
        throw ToolError(name_, "a bzip2 stream of this multistream file is larger than 256 MB: use --threads 1");
      from = std::max(from, pending_.size() > kReadBytes + 9 ? pending_.size() - kReadBytes - 9 : size_t{0});
    }
  }

  void reader_loop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || order_.size() < max_in_flight_; });
        if (stop_) return;
      }
      auto seg = std::make_shared<Segment>();
      bool more = false;
      try {
        more = next_segment(*seg);
      } catch (...) {
        seg->error = std::current_exception();
        seg->ready = true;
        more = true;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (!more) {
        done_ = true;
        cv_.notify_all();
        return;
      }
      order_.push_back(seg);
      if (!seg->ready) work_.push_back(seg);
      if (seg->error) done_ = true;
      cv_.notify_all();
      if (done_) return;
    }
  }

  void decoder_loop() {
    for (;;) {
      std::shared_ptr<Segment> seg;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !work_.empty(); });
        if (stop_) return;
        seg = work_.front();
        work_.pop_front();
      }
      try {
        decode(*seg);
      } catch (...) {
        seg->error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      seg->ready = true;
      cv_.notify_all();
    }
  }

  // Inflates every stream of the segment.
  void decode(Segment& seg) const {
    seg.plain.clear();
    seg.plain.resize(seg.compressed.size() * 6 + 4096);
    size_t in_pos = 0, out_pos = 0;
    while (in_pos < seg.compressed.size()) {
      bz_stream strm;
      std::memset(&strm, 0, sizeof strm);
      if (BZ2_bzDecompressInit(&strm, 0, 0) != BZ_OK) throw ToolError(name_, "corrupt bzip2 data: cannot start decoder");
      strm.next_in = seg.compressed.data() + in_pos;
      strm.avail_in = static_cast<unsigned>(seg.compressed.size() - in_pos);
      int ret = BZ_OK;
      for (;;) {
        if (out_pos == seg.plain.size()) seg.plain.resize(seg.plain.size() * 2);
        strm.next_out = seg.plain.data() + out_pos;
        strm.avail_out = static_cast<unsigned>(std::min<size_t>(seg.plain.size() - out_pos, 1u << 30));
        size_t before = strm.avail_out;
        ret = BZ2_bzDecompress(&strm);
        out_pos += before - strm.avail_out;
        if (ret != BZ_OK) break;
        if (strm.avail_in == 0 && strm.avail_out > 0) break;  // input used up inside a stream
      }
      in_pos = seg.compressed.size() - strm.avail_in;
      BZ2_bzDecompressEnd(&strm);
      if (ret == BZ_STREAM_END) continue;
      if (ret == BZ_OK) {
        if (seg.last) throw ToolError(name_, "truncated bzip2 stream (unexpected end of file)");
        throw ToolError(name_, "corrupt bzip2 data: a stream ends before the next one starts");
      }
      throw ToolError(name_, "corrupt bzip2 data: bzip2 error " + std::to_string(ret));
    }
    seg.plain.resize(out_pos);
    seg.compressed.clear();
    seg.compressed.shrink_to_fit();
  }

  int fd_;
  std::string name_;
  uint64_t size_;
  std::string pending_;     // compressed bytes read but not yet cut (reader thread only)
  uint64_t raw_offset_ = 0;  // file offset after pending_ (reader thread only)
  bool eof_ = false;
  size_t max_in_flight_;
  std::atomic<uint64_t> raw_read_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Segment>> order_;  // in file order, consumed by read()
  std::deque<std::shared_ptr<Segment>> work_;   // waiting for a decoder
  bool done_ = false;
  bool stop_ = false;
  std::thread reader_;
  std::vector<std::thread> decoders_;

  Segment* current_ = nullptr;  // consumer side
  size_t current_pos_ = 0;
};

}  // namespace

std::unique_ptr<Input> open_input_parallel(const std::string& path, int threads) {
  if (threads <= 1 || path.empty() || path == "-") return open_input(path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return open_input(path);  // open_input reports the error in the usual words
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return open_input(path);
  }
  // Probe the head: bzip2, and a second stream start within it?
  std::string head(std::min<uint64_t>(kProbeBytes, static_cast<uint64_t>(st.st_size)), '\0');
  size_t have = 0;
  while (have < head.size()) {
    ssize_t got = ::pread(fd, head.data() + have, head.size() - have, static_cast<off_t>(have));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    have += static_cast<size_t>(got);
  }
  head.resize(have);
  if (have < 10 || !stream_start(head.data()) || find_stream_start(head, 4) == std::string::npos) {
    ::close(fd);
    return open_input(path);
  }
  if (::lseek(fd, static_cast<off_t>(have), SEEK_SET) < 0) {
    ::close(fd);
    return open_input(path);
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return with_text_start(
      std::make_unique<ParallelBz2Input>(fd, path, static_cast<uint64_t>(st.st_size), std::move(head), threads));
}

}  // namespace suite
