#include "common/dataset/dtype.h"

#include <array>

namespace suite::dataset {

namespace {
struct DTypeInfo {
  DType type;
  size_t size;
  std::string_view name;
  uint8_t idx_code;  // 0 = not representable in .idx
  std::string_view descr;
  bool integer;
};

constexpr std::array<DTypeInfo, 10> kTable{{
    {DType::UInt8, 1, "uint8", 1, "|u1", true},
    {DType::Int8, 1, "int8", 2, "|i1", true},
    {DType::Int16, 2, "int16", 3, "<i2", true},
    {DType::Int32, 4, "int32", 4, "<i4", true},
    {DType::Int64, 8, "int64", 5, "<i8", true},
    {DType::Float64, 8, "float64", 6, "<f8", false},
    {DType::Float32, 4, "float32", 7, "<f4", false},
    {DType::UInt16, 2, "uint16", 8, "<u2", true},
    {DType::UInt32, 4, "uint32", 0, "<u4", true},
    {DType::UInt64, 8, "uint64", 0, "<u8", true},
}};

const DTypeInfo& info(DType t) { return kTable[static_cast<size_t>(t)]; }
}  // namespace

size_t itemsize(DType t) { return info(t).size; }
uint64_t max_token_id(DType t) {
  switch (t) {
    case DType::UInt8: return 255;
    case DType::Int8: return 127;
    case DType::Int16: return 32767;
    case DType::UInt16: return 65535;
    case DType::Int32: return 2147483647;
    default: return 4294967295ull;
  }
}
std::string_view dtype_name(DType t) { return info(t).name; }
std::string_view npy_descr(DType t) { return info(t).descr; }
bool is_integer(DType t) { return info(t).integer; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& e : kTable)
    if (e.name == name) return e.type;
  return std::nullopt;
}

std::optional<uint8_t> idx_code(DType t) {
  if (info(t).idx_code == 0) return std::nullopt;
  return info(t).idx_code;
}

std::optional<DType> dtype_from_idx_code(uint8_t code) {
  for (const auto& e : kTable)
    if (e.idx_code != 0 && e.idx_code == code) return e.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_npy_descr(std::string_view descr) {
  // numpy writes '|' for one-byte types but also accepts '<' / '=' there.
  for (const auto& e : kTable) {
    if (e.descr == descr) return e.type;
    if (e.size == 1 && descr.size() == 3 && (descr[0] == '<' || descr[0] == '=') &&
        descr.substr(1) == e.descr.substr(1))
      return e.type;
  }
  return std::nullopt;
}

DType token_dtype_for_vocab(uint64_t vocab_size) {
  return vocab_size < 65500 ? DType::UInt16 : DType::Int32;
}

}  // namespace suite::dataset
