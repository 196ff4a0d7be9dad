// TensorBoard event files as PyTorch's SummaryWriter writes them: TFRecord framing (uint64 length,
// masked CRC-32C of the length, the record, masked CRC-32C of the record) around `Event` protocol
// buffers (third_party/tensorboard/.../event.proto): first `file_version: "brain.Event:2"`, then
// one `summary { value { tag, simple_value } }` per scalar. The few fields used are encoded by hand
// from their field numbers, so no protobuf runtime is needed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gpt {

// The serialized Event messages (exposed for tests).
std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag,
                                float value);
// One TFRecord: length, masked CRC of the length, data, masked CRC of the data.
std::string frame_tfrecord(const std::string& data);

class TensorBoardWriter {
 public:
  // Creates `dir` (and its parents) and `dir`/events.out.tfevents.<unix time>.<host name>, and
  // writes the file_version event. Throws suite::ToolError when either cannot be created.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Buffered; a crash loses at most what was added since the last flush(), and the file stays
  // readable up to the last whole record.
  void add_scalar(const std::string& tag, double value, int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& event);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace gpt
