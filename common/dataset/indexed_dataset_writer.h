// Streaming writer of a Megatron MMIDIDX dataset, with the semantics of Megatron's
// MMapIndexedDatasetBuilder:
//
//   add_item(tokens)          one sequence (may be empty: a 0-length sequence)
//   end_document()            closes a document: appends the current sequence count to the
//                             document index (called after no add_item = zero-sequence document,
//                             which is what preprocess_data.py >= 2023-06 writes for empty text)
//   add_document(tokens, lens) a whole document of several sequences (sentence-level datasets);
//                             always ends the document, even when `lens` is empty
//   add_index(dataset)        appends another dataset (same dtype) with its document boundaries
//   finalize()                writes both files
//
// Output is atomic: PREFIX.bin and PREFIX.idx are written under temporary names in the target
// directory; finalize() removes the old PREFIX.idx, then renames the .bin and the .idx last, so a
// killed run leaves the old pair, or a .bin without an .idx, never a new .bin beside an old .idx.
// The writer holds PREFIX.lock (common/io/output_lock.h) from construction on: a second writer on
// the same prefix fails at start. Without finalize() the destructor removes the temporary files.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/cli/error.h"
#include "common/dataset/dtype.h"

namespace suite {
class AtomicFile;
class OutputLock;
}

namespace suite::dataset {

class IndexedDataset;

class IndexedDatasetWriter {
 public:
  // dtype must have an MMIDIDX code (uint8, int8, int16, uint16, int32, int64, float32, float64).
  IndexedDatasetWriter(std::string prefix, DType dtype);
  ~IndexedDatasetWriter();
  IndexedDatasetWriter(const IndexedDatasetWriter&) = delete;
  IndexedDatasetWriter& operator=(const IndexedDatasetWriter&) = delete;

  const std::string& prefix() const { return prefix_; }
  DType dtype() const { return dtype_; }
  uint64_t sequence_count() const { return lengths_.size(); }
  uint64_t document_count() const { return doc_idx_.size() - 1; }

  // Tokens of any integer type; each must fit the dataset dtype (ToolError otherwise).
  template <std::integral T>
  void add_item(std::span<const T> tokens) {
    put_tokens(tokens);
    push_length(tokens.size());
  }
  template <std::integral T>
  void add_item(const std::vector<T>& tokens) {
    add_item(std::span<const T>(tokens));
  }

  void end_document() { doc_idx_.push_back(static_cast<int64_t>(lengths_.size())); }

  // `tokens` is the concatenation of the document's sequences; `lengths` must sum to its size.
  template <std::integral T>
  void add_document(std::span<const T> tokens, std::span<const int32_t> lengths) {
    check_document_lengths(tokens.size(), lengths);
    put_tokens(tokens);
    for (int32_t n : lengths) push_length(static_cast<uint64_t>(n));
    end_document();
  }

  // Megatron add_index / merge_file_: requires the same dtype.
  void add_index(const IndexedDataset& other);

  // Removes the old PREFIX.idx, renames PREFIX.bin, then PREFIX.idx. The writer cannot be used afterwards.
  void finalize();

 private:
  template <typename Out, typename In>
  void put_as(std::span<const In> tokens) {
    const size_t old = buffer_.size();
    buffer_.resize(old + tokens.size() * sizeof(Out));
    Out* out = reinterpret_cast<Out*>(buffer_.data() + old);  // aligned: buffer_ holds whole items only
    for (size_t i = 0; i < tokens.size(); ++i) {
      const In t = tokens[i];
      if (!std::in_range<Out>(t)) {
        buffer_.resize(old);
        throw_out_of_range(static_cast<long long>(t));
      }
      out[i] = static_cast<Out>(t);
    }
    if (buffer_.size() >= kFlushBytes) flush();
  }
  template <std::integral T>
  void put_tokens(std::span<const T> tokens) {
    check_open();
    switch (dtype_) {
      case DType::UInt8: put_as<uint8_t>(tokens); break;
      case DType::Int8: put_as<int8_t>(tokens); break;
      case DType::Int16: put_as<int16_t>(tokens); break;
      case DType::UInt16: put_as<uint16_t>(tokens); break;
      case DType::Int32: put_as<int32_t>(tokens); break;
      case DType::Int64: put_as<int64_t>(tokens); break;
      default: throw_not_integer();
    }
  }
  void push_length(uint64_t n);
  void check_document_lengths(uint64_t total, std::span<const int32_t> lengths) const;
  void check_open() const;
  [[noreturn]] void throw_out_of_range(long long token) const;
  [[noreturn]] void throw_not_integer() const;
  void flush();

  static constexpr size_t kFlushBytes = 1 << 20;

  std::string prefix_;
  DType dtype_;
  std::unique_ptr<OutputLock> lock_;
  std::unique_ptr<AtomicFile> bin_;
  std::vector<std::byte> buffer_;  // pending .bin bytes; always a multiple of the item size
  std::vector<int32_t> lengths_;
  std::vector<int64_t> doc_idx_{0};
  bool finalized_ = false;
};

// Serialises an .idx image (header, lengths, pointers from §1.5, document index).
std::vector<std::byte> encode_idx(DType dtype, std::span<const int32_t> lengths, std::span<const int64_t> doc_idx);

}  // namespace suite::dataset
