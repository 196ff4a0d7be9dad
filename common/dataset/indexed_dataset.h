// Validated, memory-mapped reader of a Megatron MMIDIDX dataset (`PREFIX.bin` + `PREFIX.idx`).
//
// Opening checks everything a later read relies on, so accessors need no checks of their own:
// magic, version, dtype code, that the .idx size matches its header (with or without the
// multimodal mode array), document index (starts at 0, non-decreasing, ends at S), lengths
// (non-negative), pointers (exclusive prefix sums of lengths * itemsize, as Megatron writes them)
// and that the .bin holds exactly the bytes the index describes. Failures throw
// suite::ToolError(file, "<field>: <what>").
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/dataset/dtype.h"
#include "common/dataset/mapped_file.h"

namespace suite::dataset {

class IndexedDataset {
 public:
  // Opens PREFIX.idx and PREFIX.bin.
  explicit IndexedDataset(const std::string& prefix);
  // Opens an explicit pair (used by tests and by tools taking both paths).
  IndexedDataset(const std::string& idx_file, const std::string& bin_file);

  const std::string& idx_file() const { return idx_.path(); }
  const std::string& bin_file() const { return bin_.path(); }
  DType dtype() const { return dtype_; }

  // Sequences ("items"/"sentences"): the unit that has a length and a pointer.
  uint64_t sequence_count() const { return lengths_.size(); }
  // Documents: document d owns sequences [document_index(d), document_index(d + 1)).
  uint64_t document_count() const { return doc_entries_ - 1; }
  // Entries in the document index (= document_count() + 1).
  uint64_t document_index_size() const { return doc_entries_; }

  // All sequence lengths (an aligned copy of the .idx array; what the index-map builder takes).
  std::span<const int32_t> sequence_lengths() const { return lengths_; }
  int32_t sequence_length(uint64_t i) const { return lengths_[i]; }
  int64_t sequence_pointer(uint64_t i) const { return load_i64(pointers_offset_ + 8 * i); }
  int64_t document_index(uint64_t d) const { return load_i64(doc_offset_ + 8 * d); }
  std::vector<int64_t> document_indices() const;
  // Multimodal mode array (present when the .idx has S trailing bytes); empty otherwise.
  bool has_modes() const { return has_modes_; }
  int8_t mode(uint64_t i) const;

  // Raw bytes of sequence i inside the .bin.
  std::span<const std::byte> sequence_bytes(uint64_t i) const;
  // The whole .bin.
  std::span<const std::byte> data_bytes() const { return bin_.bytes(); }

  // Typed view of sequence i; T must match dtype() (ToolError otherwise). The .bin mapping is
  // page aligned and every pointer is a multiple of the item size, so the view is aligned.
  template <typename T>
  std::span<const T> tokens(uint64_t i) const {
    check_element_type(sizeof(T), is_same_kind<T>());
    auto b = sequence_bytes(i);
    return {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};
  }
  // Sequence i converted to int64 (any integer dtype); appends to `out`.
  void append_tokens(uint64_t i, std::vector<int64_t>& out) const;
  // Token j of sequence i as int64.
  int64_t token(uint64_t i, uint64_t j) const;

 private:
  void validate();
  int64_t load_i64(uint64_t offset) const {
    int64_t v;
    std::memcpy(&v, idx_.data() + offset, 8);
    return v;
  }
  template <typename T>
  static DType is_same_kind();
  void check_element_type(size_t size, DType requested) const;

  MappedFile idx_;
  MappedFile bin_;
  DType dtype_ = DType::UInt16;
  std::vector<int32_t> lengths_;
  uint64_t doc_entries_ = 0;
  uint64_t pointers_offset_ = 0;
  uint64_t doc_offset_ = 0;
  uint64_t modes_offset_ = 0;
  bool has_modes_ = false;
};

template <typename T>
DType IndexedDataset::is_same_kind() {
  if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::Int16;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::UInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else static_assert(sizeof(T) == 0, "unsupported token element type");
}

// True when both PREFIX.idx and PREFIX.bin exist (Megatron `IndexedDataset.exists`).
bool indexed_dataset_exists(const std::string& prefix);

}  // namespace suite::dataset
