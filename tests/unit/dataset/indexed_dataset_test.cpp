#include <doctest/doctest.h>

#include <cstring>
#include <functional>

#include "common/dataset/idx_format.h"
#include "common/dataset/indexed_dataset.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

TEST_CASE("reader accepts the golden fortunes dataset") {
  IndexedDataset ds(kGoldenPrefix);
  CHECK(ds.dtype() == DType::UInt16);
  CHECK(ds.sequence_count() == 14805);
  CHECK(ds.document_count() == 14805);
  CHECK(!ds.has_modes());
  CHECK(ds.sequence_length(0) == 83);
  CHECK(ds.sequence_length(1) == 51);
  CHECK(ds.sequence_length(3) == 251);
  CHECK(ds.sequence_pointer(1) == 166);
  uint64_t tokens = 0;
  for (uint64_t i = 0; i < ds.sequence_count(); ++i) {
    auto t = ds.tokens<uint16_t>(i);
    REQUIRE(t.size() == static_cast<size_t>(ds.sequence_length(i)));
    REQUIRE(t.back() == 50256);  // --append-eod
    tokens += t.size();
    REQUIRE(ds.document_index(i) == static_cast<int64_t>(i));  // one sequence per document
  }
  CHECK(tokens * 2 == ds.data_bytes().size());
  std::vector<int64_t> seq;
  ds.append_tokens(0, seq);
  CHECK(seq.size() == 83);
  CHECK(seq.back() == 50256);
  CHECK(ds.token(0, 82) == 50256);
  CHECK(tool_error([&] { ds.tokens<int32_t>(0); }).find("dtype") != std::string::npos);
  CHECK(indexed_dataset_exists(kGoldenPrefix));
  CHECK(!indexed_dataset_exists(kGoldenPrefix + "-missing"));
}

namespace {

// Writes a corrupted copy of the golden pair and returns the reader's error message.
std::string open_corrupted(const TempDir& tmp, const std::function<void(std::string& idx, std::string& bin)>& corrupt) {
  std::string idx = read_bytes(kGoldenPrefix + ".idx");
  std::string bin = read_bytes(kGoldenPrefix + ".bin");
  corrupt(idx, bin);
  write_bytes(tmp / "c.idx", idx);
  write_bytes(tmp / "c.bin", bin);
  return tool_error([&] { IndexedDataset ds(tmp / "c"); });
}

void put_u64(std::string& s, size_t offset, uint64_t v) { std::memcpy(s.data() + offset, &v, 8); }
void put_i32(std::string& s, size_t offset, int32_t v) { std::memcpy(s.data() + offset, &v, 4); }

constexpr size_t kS = 14805;
constexpr size_t kPointers = 34 + 4 * kS;
constexpr size_t kDocs = kPointers + 8 * kS;

}  // namespace

TEST_CASE("reader rejects corrupted copies, naming file and field") {
  TempDir tmp;
  const std::string idx_name = tmp / "c.idx";
  auto expect = [&](const std::string& msg, const std::string& where, const char* field) {
    CHECK_MESSAGE(msg.rfind(where + ": ", 0) == 0, msg);
    CHECK_MESSAGE(msg.find(field) != std::string::npos, msg);
  };
  SUBCASE("truncated index") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { idx.resize(idx.size() - 100); }), idx_name,
           "size: ");
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { idx.resize(20); }), idx_name, "header: ");
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { idx.resize(4); }), idx_name, "magic: ");
  }
  SUBCASE("bad magic") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { idx[0] = 'X'; }), idx_name, "magic: ");
  }
  SUBCASE("bad version") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_u64(idx, 9, 2); }), idx_name, "version: ");
  }
  SUBCASE("bad dtype code") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { idx[17] = 9; }), idx_name, "dtype: ");
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { idx[17] = 0; }), idx_name, "dtype: ");
  }
  SUBCASE("sequence count disagrees with the file size") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_u64(idx, 18, kS + 1); }), idx_name, "size: ");
  }
  SUBCASE("pointer past the end of .bin") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_u64(idx, kPointers + 8 * 5, 1ull << 40); }),
           idx_name, "sequence_pointers[5]: ");
  }
  SUBCASE("pointer inconsistent with lengths") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_u64(idx, kPointers + 8 * 7, 2); }), idx_name,
           "sequence_pointers[7]: ");
  }
  SUBCASE("length past the end of .bin") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_i32(idx, 34 + 4 * (kS - 1), 1 << 30); }),
           idx_name, "sequence_lengths[14804]: ");
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_i32(idx, 34 + 4 * 3, -1); }), idx_name,
           "sequence_lengths[3]: ");
  }
  SUBCASE("document index inconsistent") {
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_u64(idx, kDocs, 1); }), idx_name,
           "document_index[0]: ");
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_u64(idx, kDocs + 8 * 10, 3); }), idx_name,
           "document_index[10]: ");
    expect(open_corrupted(tmp, [](std::string& idx, std::string&) { put_u64(idx, kDocs + 8 * kS, kS - 1); }),
           idx_name, "document_index[14805]: ");
  }
  SUBCASE(".bin from another run") {
    expect(open_corrupted(tmp, [](std::string&, std::string& bin) { bin += "xx"; }), tmp / "c.bin", "size: ");
    expect(open_corrupted(tmp, [](std::string&, std::string& bin) { bin.resize(bin.size() - 2); }), idx_name,
           "sequence_lengths[14804]: ");
  }
  SUBCASE("missing files") {
    const std::string msg = tool_error([&] { IndexedDataset ds(tmp / "absent"); });
    CHECK(msg.find(tmp / "absent.idx") == 0);
  }
}

TEST_CASE("reader accepts a trailing multimodal mode array") {
  TempDir tmp;
  std::string idx = read_bytes(kGoldenPrefix + ".idx");
  idx.append(kS, '\0');
  idx[idx.size() - 1] = 3;
  write_bytes(tmp / "m.idx", idx);
  write_bytes(tmp / "m.bin", read_bytes(kGoldenPrefix + ".bin"));
  IndexedDataset ds(tmp / "m");
  CHECK(ds.has_modes());
  CHECK(ds.mode(kS - 1) == 3);
  CHECK(ds.mode(0) == 0);
}
