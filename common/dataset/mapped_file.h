// A read-only memory map of a whole file (RAII). Empty files map to an empty span.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace suite::dataset {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws ToolError(path, ...) when the file cannot be opened or mapped.
  explicit MappedFile(std::string path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  size_t size() const { return size_; }
  const std::byte* data() const { return data_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  void release();
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace suite::dataset
