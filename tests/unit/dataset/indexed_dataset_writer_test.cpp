#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "common/dataset/indexed_dataset.h"
#include "common/dataset/indexed_dataset_writer.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

TEST_CASE("writing the golden dataset's documents back gives identical .bin/.idx") {
  TempDir tmp;
  IndexedDataset golden(kGoldenPrefix);
  {
    IndexedDatasetWriter w(tmp / "out", token_dtype_for_vocab(50257));
    for (uint64_t i = 0; i < golden.sequence_count(); ++i) {
      std::vector<int64_t> tokens;
      golden.append_tokens(i, tokens);
      w.add_item(tokens);
      w.end_document();
    }
    w.finalize();
  }
  CHECK(read_bytes(tmp / "out.bin") == read_bytes(kGoldenPrefix + ".bin"));
  CHECK(read_bytes(tmp / "out.idx") == read_bytes(kGoldenPrefix + ".idx"));
  // Only the two outputs remain: no temporary files.
  CHECK(std::distance(std::filesystem::directory_iterator(tmp.path()), std::filesystem::directory_iterator()) == 2);
}

TEST_CASE("worked example of spec 1.11 and the empty dataset") {
  TempDir tmp;
  IndexedDatasetWriter w(tmp / "ex", DType::UInt16);
  w.add_item(std::vector<int32_t>{15496, 995, 50256});
  w.end_document();
  w.add_item(std::vector<uint16_t>{40, 1842, 50256});
  w.end_document();
  w.finalize();
  CHECK(read_bytes(tmp / "ex.bin") == std::string("\x88\x3c\xe3\x03\x50\xc4\x28\x00\x32\x07\x50\xc4", 12));
  const std::string idx = read_bytes(tmp / "ex.idx");
  REQUIRE(idx.size() == 82);
  const unsigned char expected[82] = {
      0x4d, 0x4d, 0x49, 0x44, 0x49, 0x44, 0x58, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x08, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x03, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  CHECK(idx == std::string(reinterpret_cast<const char*>(expected), 82));

  IndexedDatasetWriter empty(tmp / "empty", DType::UInt16);
  empty.finalize();
  CHECK(read_bytes(tmp / "empty.bin").empty());
  CHECK(read_bytes(tmp / "empty.idx").size() == 42);
  IndexedDataset e(tmp / "empty");
  CHECK(e.sequence_count() == 0);
  CHECK(e.document_count() == 0);
}

TEST_CASE("empty documents and sentence-level documents follow the Megatron builder") {
  TempDir tmp;
  IndexedDatasetWriter w(tmp / "s", DType::Int32);
  const std::vector<int64_t> doc1 = {1, 2, 3, 70000, 5};
  const std::vector<int32_t> lens1 = {2, 3};
  w.add_document(std::span<const int64_t>(doc1), std::span<const int32_t>(lens1));
  w.end_document();  // empty text: zero-sequence document
  w.add_document(std::span<const int64_t>(), std::span<const int32_t>());  // add_doc always ends a document
  w.add_item(std::vector<int32_t>{});  // a 0-length sequence
  w.add_item(std::vector<int32_t>{9});
  w.end_document();
  CHECK(w.sequence_count() == 4);
  CHECK(w.document_count() == 4);
  w.finalize();
  IndexedDataset ds(tmp / "s");
  CHECK(ds.dtype() == DType::Int32);
  CHECK(ds.document_indices() == std::vector<int64_t>{0, 2, 2, 2, 4});
  CHECK(ds.sequence_length(0) == 2);
  CHECK(ds.sequence_length(1) == 3);
  CHECK(ds.sequence_length(2) == 0);
  CHECK(ds.tokens<int32_t>(1)[1] == 70000);
  CHECK(ds.sequence_pointer(3) == 20);
  CHECK(ds.tokens<int32_t>(3)[0] == 9);
}

TEST_CASE("writer refuses tokens outside the dtype and bad sentence lengths") {
  TempDir tmp;
  IndexedDatasetWriter w(tmp / "r", DType::UInt16);
  CHECK(tool_error([&] { w.add_item(std::vector<int32_t>{1, 65536}); }).find("65536") != std::string::npos);
  CHECK(tool_error([&] { w.add_item(std::vector<int32_t>{-1}); }).find("uint16") != std::string::npos);
  const std::vector<int32_t> doc = {1, 2, 3};
  const std::vector<int32_t> lens = {1, 1};
  CHECK(tool_error([&] { w.add_document(std::span<const int32_t>(doc), std::span<const int32_t>(lens)); })
            .find("sequence_lengths") != std::string::npos);
  CHECK(w.sequence_count() == 0);
  CHECK(tool_error([] { IndexedDatasetWriter bad("/nonexistent-dir/x", DType::UInt16); }).find("/nonexistent-dir/x.bin") == 0);
  CHECK(tool_error([&] { IndexedDatasetWriter bad(tmp / "u", DType::UInt32); }).find("dtype") != std::string::npos);
}

TEST_CASE("an unfinalized writer leaves nothing behind and keeps old files") {
  TempDir tmp;
  {
    IndexedDatasetWriter w(tmp / "a", DType::UInt16);
    w.add_item(std::vector<int32_t>{1});
    w.end_document();
    w.finalize();
  }
  const std::string old_idx = read_bytes(tmp / "a.idx");
  {
    IndexedDatasetWriter w(tmp / "a", DType::UInt16);
    w.add_item(std::vector<int32_t>{1, 2, 3});
    w.end_document();
  }  // destroyed without finalize
  CHECK(read_bytes(tmp / "a.idx") == old_idx);
  CHECK(std::distance(std::filesystem::directory_iterator(tmp.path()), std::filesystem::directory_iterator()) == 2);
}

TEST_CASE("dtype follows Megatron's vocabulary-size rule") {
  CHECK(token_dtype_for_vocab(50257) == DType::UInt16);
  CHECK(token_dtype_for_vocab(65499) == DType::UInt16);
  CHECK(token_dtype_for_vocab(65500) == DType::Int32);
  CHECK(token_dtype_for_vocab(128256) == DType::Int32);
  CHECK(idx_code(DType::UInt16) == 8);
  CHECK(dtype_from_idx_code(4) == DType::Int32);
  CHECK(!dtype_from_idx_code(9));
}

TEST_CASE("a writer holds PREFIX.lock against other processes until it is destroyed") {
  TempDir tmp;
  // Another process's view, through util-linux's flock(1): exit 0 only when the lock is free.
  auto free_for_others = [&] { return std::system(("flock -n " + tmp / "p.lock" + " true").c_str()) == 0; };
  {
    IndexedDatasetWriter first(tmp / "p", DType::UInt16);
    CHECK(std::filesystem::exists(tmp / "p.lock"));
    CHECK(!free_for_others());
    first.add_item(std::vector<int32_t>{1, 2});
    first.end_document();
    first.finalize();
    CHECK(!free_for_others());
  }
  // Released with the writer, and the lock file is gone.
  CHECK(!std::filesystem::exists(tmp / "p.lock"));
  CHECK(free_for_others());
}
