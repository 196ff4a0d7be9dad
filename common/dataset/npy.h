// .npy files exactly as numpy >= 1.14 `np.save` writes them (format 1.0, 64-byte aligned header,
// numpy 1.24 growth padding — the bytes are the same for 1.14 ... 2.x for these arrays), and a
// reader for the files numpy writes (format 1.0/2.0/3.0, little-endian, C order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/cli/error.h"
#include "common/dataset/big_buffer.h"
#include "common/dataset/dtype.h"

namespace suite::dataset {

// A C-order array: element type, shape and raw little-endian bytes.
struct NpyArray {
  DType dtype = DType::Int32;
  std::vector<uint64_t> shape;
  ByteBuffer data;  // uninitialised on resize; huge pages when large

  uint64_t element_count() const;

  // Typed view; T must match dtype (ToolError otherwise). `data` comes from operator new, so it
  // is aligned for every element type.
  template <typename T>
  std::span<const T> as() const {
    check_type(sizeof(T), std::is_signed_v<T>, std::is_floating_point_v<T>);
    return {reinterpret_cast<const T*>(data.data()), data.size() / sizeof(T)};
  }
  template <typename T>
  std::span<T> as() {
    check_type(sizeof(T), std::is_signed_v<T>, std::is_floating_point_v<T>);
    return {reinterpret_cast<T*>(data.data()), data.size() / sizeof(T)};
  }

  // Builds an array from typed values (dtype deduced from T).
  template <typename T>
  static NpyArray from(std::span<const T> values, std::vector<uint64_t> shape);
  template <typename T>
  static NpyArray from(const std::vector<T>& values, std::vector<uint64_t> shape) {
    return from(std::span<const T>(values), std::move(shape));
  }
  template <typename T>
  static NpyArray from(const std::vector<T>& values) {
    return from(std::span<const T>(values), {values.size()});
  }

 private:
  void check_type(size_t size, bool is_signed, bool is_float) const;
};

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::Int16;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::UInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::UInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::UInt64;
  else if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else static_assert(sizeof(T) == 0, "unsupported npy element type");
}

template <typename T>
NpyArray NpyArray::from(std::span<const T> values, std::vector<uint64_t> shape) {
  NpyArray a;
  a.dtype = dtype_of<T>();
  a.shape = std::move(shape);
  if (a.element_count() != values.size())
    throw ToolError("npy: shape holds " + std::to_string(a.element_count()) + " elements, got " +
                    std::to_string(values.size()));
  a.data.resize(values.size_bytes());
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), values.size_bytes());
  return a;
}

// The complete header (magic, version, length, dict text, padding, '\n') np.save writes.
std::string npy_header(DType dtype, std::span<const uint64_t> shape);

// Header followed by `data` (must hold product(shape) * itemsize bytes), written atomically.
void write_npy(const std::string& path, DType dtype, std::span<const uint64_t> shape, std::span<const std::byte> data);
void write_npy(const std::string& path, const NpyArray& array);

// Parses a .npy file; ToolError(path, "<field>: ...") for anything numpy would not have written
// for a plain little-endian C-order array.
NpyArray read_npy(const std::string& path);
// Same, from bytes in memory (`name` is used in messages).
NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& name);

}  // namespace suite::dataset
