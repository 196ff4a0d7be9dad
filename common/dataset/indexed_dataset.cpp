#include "common/dataset/indexed_dataset.h"

#include <sys/stat.h>

#include <cstdio>

#include "common/dataset/idx_format.h"

namespace suite::dataset {

namespace {

uint64_t load_u64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::string hex_bytes(std::span<const std::byte> b) {
  std::string out;
  char buf[4];
  for (std::byte c : b) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned>(c));
    if (!out.empty()) out += ' ';
    out += buf;
  }
  return out;
}

std::string field(const char* name, uint64_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; }

}  // namespace

IndexedDataset::IndexedDataset(const std::string& prefix)
    : IndexedDataset(idx_path(prefix), bin_path(prefix)) {}

IndexedDataset::IndexedDataset(const std::string& idx_file, const std::string& bin_file)
    : idx_(idx_file), bin_(bin_file) {
  validate();
}

void IndexedDataset::validate() {
  const std::string& file = idx_.path();
  const uint64_t size = idx_.size();
  const std::byte* p = idx_.data();
  if (size < kIdxMagic.size())
    throw ToolError(file, "magic: file is " + std::to_string(size) +
                              " bytes, too short for an MMIDIDX header (truncated?)");
  if (std::memcmp(p, kIdxMagic.data(), kIdxMagic.size()) != 0)
    throw ToolError(file, "magic: expected 4d 4d 49 44 49 44 58 00 00 (\"MMIDIDX\\0\\0\"), found " +
                              hex_bytes({p, kIdxMagic.size()}) + " (not a Megatron mmap index)");
  if (size < kIdxHeaderSize)
    throw ToolError(file, "header: file is " + std::to_string(size) + " bytes, shorter than the " +
                              std::to_string(kIdxHeaderSize) + "-byte header (truncated?)");
  const uint64_t version = load_u64(p + 9);
  if (version != kIdxVersion)
    throw ToolError(file, "version: " + std::to_string(version) + " is not supported (only version 1)");
  const auto code = static_cast<uint8_t>(p[17]);
  auto dt = dtype_from_idx_code(code);
  if (!dt) throw ToolError(file, "dtype: unknown dtype code " + std::to_string(code) + " (valid: 1-8)");
  dtype_ = *dt;
  const uint64_t s = load_u64(p + 18);
  const uint64_t d1 = load_u64(p + 26);
  if (d1 == 0) throw ToolError(file, "document_count: the document index has 0 entries (needs at least 1)");
  // Bound the counts by the file size before multiplying, so the arithmetic cannot overflow.
  if (s > size / 12 || d1 > size / 8)
    throw ToolError(file, "size: file is " + std::to_string(size) + " bytes, too short for " +
                              std::to_string(s) + " sequences and " + std::to_string(d1) +
                              " document index entries (truncated?)");
  const uint64_t expected = kIdxHeaderSize + 12 * s + 8 * d1;
  if (size == expected) {
    has_modes_ = false;
  } else if (size == expected + s && s > 0) {
    has_modes_ = true;
  } else {
    throw ToolError(file, "size: file is " + std::to_string(size) + " bytes but its header (" +
                              std::to_string(s) + " sequences, " + std::to_string(d1) +
                              " document index entries) needs " + std::to_string(expected) +
                              (size < expected ? " (truncated?)" : " (trailing bytes)"));
  }
  doc_entries_ = d1;
  pointers_offset_ = kIdxHeaderSize + 4 * s;
  doc_offset_ = pointers_offset_ + 8 * s;
  modes_offset_ = doc_offset_ + 8 * d1;

  lengths_.resize(s);
  if (s > 0) std::memcpy(lengths_.data(), p + kIdxHeaderSize, 4 * s);

  // Document index: 0, non-decreasing, ends at S.
  int64_t prev = document_index(0);
  if (prev != 0)
    throw ToolError(file, "document_index[0]: is " + std::to_string(prev) + ", must be 0");
  for (uint64_t d = 1; d < d1; ++d) {
    int64_t cur = document_index(d);
    if (cur < prev)
      throw ToolError(file, field("document_index", d) + ": " + std::to_string(cur) +
                                " is smaller than the previous entry " + std::to_string(prev));
    prev = cur;
  }
  if (static_cast<uint64_t>(prev) != s)
    throw ToolError(file, field("document_index", d1 - 1) + ": last entry is " + std::to_string(prev) +
                              " but there are " + std::to_string(s) + " sequences");

  // Lengths and pointers against each other and against the .bin.
  const uint64_t isz = itemsize(dtype_);
  const uint64_t bin_size = bin_.size();
  uint64_t expected_ptr = 0;
  for (uint64_t i = 0; i < s; ++i) {
    const int32_t len = lengths_[i];
    if (len < 0)
      throw ToolError(file, field("sequence_lengths", i) + ": negative length " + std::to_string(len));
    const int64_t ptr = sequence_pointer(i);
    const uint64_t nbytes = static_cast<uint64_t>(len) * isz;
    const bool ptr_ok = ptr >= 0 && static_cast<uint64_t>(ptr) == expected_ptr;
    if (ptr < 0 || static_cast<uint64_t>(ptr) > bin_size || nbytes > bin_size - static_cast<uint64_t>(ptr)) {
      const std::string what = "sequence " + std::to_string(i) + " (pointer " + std::to_string(ptr) +
                               ", length " + std::to_string(len) + ") runs past the end of " +
                               bin_.path() + " (" + std::to_string(bin_size) + " bytes)";
      throw ToolError(file, field(ptr_ok ? "sequence_lengths" : "sequence_pointers", i) + ": " + what);
    }
    if (!ptr_ok)
      throw ToolError(file, field("sequence_pointers", i) + ": is " + std::to_string(ptr) + ", expected " +
                                std::to_string(expected_ptr) + " (sum of the previous lengths times " +
                                std::to_string(isz) + " bytes)");
    expected_ptr += nbytes;
  }
  if (expected_ptr != bin_size)
    throw ToolError(bin_.path(), "size: file is " + std::to_string(bin_size) + " bytes but " + file +
                                     " describes " + std::to_string(expected_ptr) +
                                     " (.bin and .idx from different runs?)");
}

std::vector<int64_t> IndexedDataset::document_indices() const {
  std::vector<int64_t> out(doc_entries_);
  std::memcpy(out.data(), idx_.data() + doc_offset_, 8 * doc_entries_);
  return out;
}

int8_t IndexedDataset::mode(uint64_t i) const {
  if (!has_modes_) throw ToolError(idx_.path(), "modes: this dataset has no multimodal mode array");
  return static_cast<int8_t>(idx_.data()[modes_offset_ + i]);
}

std::span<const std::byte> IndexedDataset::sequence_bytes(uint64_t i) const {
  const auto ptr = static_cast<uint64_t>(sequence_pointer(i));
  return {bin_.data() + ptr, static_cast<uint64_t>(lengths_[i]) * itemsize(dtype_)};
}

void IndexedDataset::check_element_type(size_t size, DType requested) const {
  if (requested != dtype_)
    throw ToolError(idx_.path(), "dtype: tokens are " + std::string(dtype_name(dtype_)) +
                                     ", requested as " + std::string(dtype_name(requested)));
}

int64_t IndexedDataset::token(uint64_t i, uint64_t j) const {
  const std::byte* p = sequence_bytes(i).data() + j * itemsize(dtype_);
  switch (dtype_) {
    case DType::UInt8: return static_cast<int64_t>(*reinterpret_cast<const uint8_t*>(p));
    case DType::Int8: return *reinterpret_cast<const int8_t*>(p);
    case DType::Int16: return *reinterpret_cast<const int16_t*>(p);
    case DType::UInt16: return *reinterpret_cast<const uint16_t*>(p);
    case DType::Int32: return *reinterpret_cast<const int32_t*>(p);
    case DType::Int64: return *reinterpret_cast<const int64_t*>(p);
    default:
      throw ToolError(idx_.path(), "dtype: " + std::string(dtype_name(dtype_)) + " tokens are not integers");
  }
}

void IndexedDataset::append_tokens(uint64_t i, std::vector<int64_t>& out) const {
  const uint64_t n = static_cast<uint64_t>(lengths_[i]);
  out.reserve(out.size() + n);
  switch (dtype_) {
    case DType::UInt16:
      for (uint16_t t : tokens<uint16_t>(i)) out.push_back(t);
      return;
    case DType::Int32:
      for (int32_t t : tokens<int32_t>(i)) out.push_back(t);
      return;
    default:
      for (uint64_t j = 0; j < n; ++j) out.push_back(token(i, j));
  }
}

bool indexed_dataset_exists(const std::string& prefix) {
  struct stat st {};
  return ::stat(idx_path(prefix).c_str(), &st) == 0 && ::stat(bin_path(prefix).c_str(), &st) == 0;
}

}  // namespace suite::dataset
