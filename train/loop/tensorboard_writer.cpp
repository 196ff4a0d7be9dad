#include "train/loop/tensorboard_writer.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "common/cli/error.h"
#include "train/loop/crc32c.h"

namespace gpt {
namespace {

// Protocol-buffer wire format: a key is (field number << 3) | wire type.
enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += char((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += char(v);
}
void put_key(std::string& out, int field, WireType type) {
  put_varint(out, uint64_t(field) << 3 | type);
}
template <typename T>
void put_fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian host (x86-64, aarch64), as the wire format
  out.append(b, sizeof(T));
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

// event.proto: Event.wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5.
// summary.proto: Summary.value = 1; Summary.Value.tag = 1, simple_value = 2 (float).
std::string event_head(double wall_time, int64_t step) {
  std::string e;
  put_key(e, 1, kFixed64);
  put_fixed(e, wall_time);
  if (step != 0) {  // proto3 leaves default values out, as protobuf's serializers do
    put_key(e, 2, kVarint);
    put_varint(e, uint64_t(step));
  }
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag,
                                float value) {
  std::string v;
  put_bytes(v, 1, tag);
  put_key(v, 2, kFixed32);
  put_fixed(v, value);
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::string frame_tfrecord(const std::string& data) {
  std::string r;
  const uint64_t n = data.size();
  put_fixed(r, n);
  put_fixed(r, masked_crc32c(r.data(), 8));
  r += data;
  put_fixed(r, masked_crc32c(data.data(), data.size()));
  return r;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw suite::ToolError(dir, "--tensorboard-dir: cannot create directory: " + ec.message());
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const double t = now_seconds();
  path_ = dir + "/events.out.tfevents." + std::to_string(int64_t(t)) + "." + host;
  // A second writer in the same second and directory (a restarted job) gets its own file.
  for (int i = 1; std::filesystem::exists(path_); ++i)
    path_ = dir + "/events.out.tfevents." + std::to_string(int64_t(t)) + "." + host + "." +
            std::to_string(i);
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) throw suite::ToolError(path_, std::string("cannot create: ") + std::strerror(errno));
  write_record(encode_file_version_event(t));
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  write_record(encode_scalar_event(now_seconds(), step, tag, float(value)));
}

void TensorBoardWriter::write_record(const std::string& event) {
  const std::string r = frame_tfrecord(event);
  if (std::fwrite(r.data(), 1, r.size(), file_) != r.size())
    throw suite::ToolError(path_, std::string("write failed: ") + std::strerror(errno));
}

void TensorBoardWriter::flush() {
  if (std::fflush(file_) != 0)
    throw suite::ToolError(path_, std::string("write failed: ") + std::strerror(errno));
}

}  // namespace gpt
