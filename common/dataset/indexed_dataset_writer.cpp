#include "common/dataset/indexed_dataset_writer.h"

#include <cstring>
#include <limits>

#include "common/dataset/idx_format.h"
#include "common/dataset/indexed_dataset.h"
#include "common/io/atomic_file.h"
#include "common/io/output_lock.h"

namespace suite::dataset {

namespace {
template <typename T>
void append_le(std::vector<std::byte>& out, T v) {
  const size_t old = out.size();
  out.resize(old + sizeof(T));
  std::memcpy(out.data() + old, &v, sizeof(T));
}
}  // namespace

std::vector<std::byte> encode_idx(DType dtype, std::span<const int32_t> lengths, std::span<const int64_t> doc_idx) {
  const auto code = idx_code(dtype);
  if (!code) throw ToolError("dtype: " + std::string(dtype_name(dtype)) + " cannot be stored in an MMIDIDX index");
  std::vector<std::byte> out;
  out.reserve(kIdxHeaderSize + 12 * lengths.size() + 8 * doc_idx.size());
  for (char c : kIdxMagic) out.push_back(static_cast<std::byte>(c));
  append_le<uint64_t>(out, kIdxVersion);
  out.push_back(static_cast<std::byte>(*code));
  append_le<uint64_t>(out, lengths.size());
  append_le<uint64_t>(out, doc_idx.size());
  const size_t base = out.size();
  out.resize(base + 4 * lengths.size());
  if (!lengths.empty()) std::memcpy(out.data() + base, lengths.data(), 4 * lengths.size());
  const int64_t isz = static_cast<int64_t>(itemsize(dtype));
  int64_t ptr = 0;
  for (int32_t n : lengths) {
    append_le<int64_t>(out, ptr);
    ptr += static_cast<int64_t>(n) * isz;
  }
  const size_t dbase = out.size();
  out.resize(dbase + 8 * doc_idx.size());
  if (!doc_idx.empty()) std::memcpy(out.data() + dbase, doc_idx.data(), 8 * doc_idx.size());
  return out;
}

IndexedDatasetWriter::IndexedDatasetWriter(std::string prefix, DType dtype)
    : prefix_(std::move(prefix)), dtype_(dtype) {
  if (!idx_code(dtype_))
    throw ToolError(idx_path(prefix_), "dtype: " + std::string(dtype_name(dtype_)) +
                                           " cannot be stored in an MMIDIDX index");
  bin_ = std::make_unique<AtomicFile>(bin_path(prefix_));
  lock_ = std::make_unique<OutputLock>(prefix_ + ".lock", prefix_ + ".{bin,idx}");
  buffer_.reserve(kFlushBytes + (1 << 16));
}

// AtomicFile discards unless committed; bin_ (declared after lock_) goes before the lock is released.
IndexedDatasetWriter::~IndexedDatasetWriter() = default;

void IndexedDatasetWriter::check_open() const {
  if (finalized_) throw ToolError(bin_path(prefix_), "writer already finalized");
}

void IndexedDatasetWriter::push_length(uint64_t n) {
  if (n > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    throw ToolError(idx_path(prefix_), "sequence_lengths: a sequence of " + std::to_string(n) +
                                           " tokens does not fit the int32 length field");
  lengths_.push_back(static_cast<int32_t>(n));
}

void IndexedDatasetWriter::check_document_lengths(uint64_t total, std::span<const int32_t> lengths) const {
  uint64_t sum = 0;
  for (int32_t n : lengths) {
    if (n < 0) throw ToolError(idx_path(prefix_), "sequence_lengths: negative sentence length " + std::to_string(n));
    sum += static_cast<uint64_t>(n);
  }
  if (sum != total)
    throw ToolError(idx_path(prefix_), "sequence_lengths: sentence lengths sum to " + std::to_string(sum) +
                                           " but the document has " + std::to_string(total) + " tokens");
}

void IndexedDatasetWriter::throw_out_of_range(long long token) const {
  throw ToolError(bin_path(prefix_), "token " + std::to_string(token) + " does not fit the dataset dtype " +
                                         std::string(dtype_name(dtype_)));
}

void IndexedDatasetWriter::throw_not_integer() const {
  throw ToolError(bin_path(prefix_), "dtype: cannot write integer tokens as " + std::string(dtype_name(dtype_)));
}

void IndexedDatasetWriter::flush() {
  if (!buffer_.empty()) bin_->write(reinterpret_cast<const char*>(buffer_.data()), buffer_.size());
  buffer_.clear();
}

void IndexedDatasetWriter::add_index(const IndexedDataset& other) {
  check_open();
  if (other.dtype() != dtype_)
    throw ToolError(other.idx_file(), "dtype: is " + std::string(dtype_name(other.dtype())) + ", but the output is " +
                                          std::string(dtype_name(dtype_)) + " (merged datasets must share a dtype)");
  if (other.has_modes())
    throw ToolError(other.idx_file(), "modes: merging multimodal datasets is not supported");
  const int64_t offset = static_cast<int64_t>(lengths_.size());
  auto other_lengths = other.sequence_lengths();
  lengths_.insert(lengths_.end(), other_lengths.begin(), other_lengths.end());
  for (uint64_t d = 1; d < other.document_index_size(); ++d) doc_idx_.push_back(offset + other.document_index(d));
  flush();
  auto bytes = other.data_bytes();
  if (!bytes.empty()) bin_->write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void IndexedDatasetWriter::finalize() {
  check_open();
  flush();
  std::vector<std::byte> idx = encode_idx(dtype_, lengths_, doc_idx_);
  // The .idx temp file is created only now, after all token data is written.
  AtomicFile idx_file(idx_path(prefix_));
  idx_file.write(reinterpret_cast<const char*>(idx.data()), idx.size());
  commit_together({bin_.get(), &idx_file});
  finalized_ = true;
}

}  // namespace suite::dataset
