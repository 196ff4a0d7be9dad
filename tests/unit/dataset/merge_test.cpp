#include <doctest/doctest.h>

#include <filesystem>

#include "common/dataset/indexed_dataset.h"
#include "common/dataset/indexed_dataset_writer.h"
#include "common/dataset/merge.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

namespace {
// Writes sequences [begin, end) of the golden dataset as its own dataset.
void write_part(const IndexedDataset& src, uint64_t begin, uint64_t end, const std::string& prefix) {
  IndexedDatasetWriter w(prefix, src.dtype());
  for (uint64_t i = begin; i < end; ++i) {
    w.add_item(src.tokens<uint16_t>(i));
    w.end_document();
  }
  w.finalize();
}
}  // namespace

TEST_CASE("merging the golden dataset's parts restores it byte for byte") {
  TempDir tmp;
  std::filesystem::create_directory(tmp / "parts");
  IndexedDataset golden(kGoldenPrefix);
  // Names chosen so that sorted order is b0 < b1 < b2 (merge_datasets.py sorts).
  write_part(golden, 0, 5000, tmp / "parts/b0");
  write_part(golden, 5000, 5000, tmp / "parts/b1");  // an empty part
  write_part(golden, 5000, golden.sequence_count(), tmp / "parts/b2");
  const auto prefixes = dataset_prefixes_in_directory(tmp / "parts");
  REQUIRE(prefixes == std::vector<std::string>{tmp / "parts/b0", tmp / "parts/b1", tmp / "parts/b2"});
  merge_datasets(prefixes, tmp / "merged");
  CHECK(read_bytes(tmp / "merged.bin") == read_bytes(kGoldenPrefix + ".bin"));
  CHECK(read_bytes(tmp / "merged.idx") == read_bytes(kGoldenPrefix + ".idx"));
}

TEST_CASE("merge keeps multi-sequence document boundaries with offsets") {
  TempDir tmp;
  const std::vector<int32_t> lens = {1, 2};
  const std::vector<int32_t> toks = {7, 8, 9};
  for (const char* name : {"x", "y"}) {
    IndexedDatasetWriter w(tmp / name, DType::UInt16);
    w.add_document(std::span<const int32_t>(toks), std::span<const int32_t>(lens));
    w.end_document();
    w.finalize();
  }
  merge_datasets({tmp / "x", tmp / "y"}, tmp / "xy");
  IndexedDataset m(tmp / "xy");
  CHECK(m.document_indices() == std::vector<int64_t>{0, 2, 2, 4, 4});
  CHECK(m.sequence_pointer(3) == 8);
  CHECK(m.tokens<uint16_t>(3)[1] == 9);
}

TEST_CASE("merge refuses mixed dtypes and stray files") {
  TempDir tmp;
  {
    IndexedDatasetWriter a(tmp / "a", DType::UInt16);
    a.finalize();
    IndexedDatasetWriter b(tmp / "b", DType::Int32);
    b.finalize();
  }
  const std::string msg = tool_error([&] { merge_datasets({tmp / "a", tmp / "b"}, tmp / "out"); });
  CHECK(msg.find(tmp / "b.idx") == 0);
  CHECK(msg.find("dtype") != std::string::npos);
  CHECK(!std::filesystem::exists(tmp / "out.idx"));
  write_bytes(tmp / "README.txt", "hello");
  CHECK(tool_error([&] { dataset_prefixes_in_directory(tmp.path()); }).find("README.txt") != std::string::npos);
  CHECK(tool_error([&] { merge_datasets({}, tmp / "out"); }).find("no input") != std::string::npos);
}
