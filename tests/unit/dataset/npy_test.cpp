#include <doctest/doctest.h>

#include <filesystem>

#include "common/dataset/npy.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

TEST_CASE("npy header is byte-identical to np.save (spec 6.3 example)") {
  const uint64_t shape[] = {10};
  const std::string h = npy_header(DType::Int32, shape);
  REQUIRE(h.size() == 128);
  CHECK(h.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (10,), }";
  CHECK(h.substr(10, dict.size()) == dict);
  CHECK(h.substr(10 + dict.size(), 59) == std::string(59, ' '));
  CHECK(h.back() == '\n');

  const uint64_t shape2[] = {14, 2};
  const std::string h2 = npy_header(DType::Int64, shape2);
  CHECK(h2.size() == 128);
  CHECK(h2.find("{'descr': '<i8', 'fortran_order': False, 'shape': (14, 2), }") == 10);
}

TEST_CASE("npy headers stay 64-byte aligned for other shapes and dtypes") {
  for (DType t : {DType::UInt8, DType::Int16, DType::UInt16, DType::UInt32, DType::Float64}) {
    for (std::vector<uint64_t> shape : std::vector<std::vector<uint64_t>>{{}, {0}, {7}, {123456789012}, {3, 4, 5}}) {
      const std::string h = npy_header(t, shape);
      CHECK(h.size() % 64 == 0);
      CHECK(h.back() == '\n');
      const size_t len = static_cast<unsigned char>(h[8]) | (static_cast<unsigned char>(h[9]) << 8);
      CHECK(len + 10 == h.size());
    }
  }
  CHECK(npy_header(DType::UInt8, std::vector<uint64_t>{5}).find("'descr': '|u1'") != std::string::npos);
  // A 0-d array has no growth padding: 10 + 46 + pad
  CHECK(npy_header(DType::Int32, std::vector<uint64_t>{}).find("'shape': (), }") != std::string::npos);
}

TEST_CASE("every golden .npy parses and re-serialises to the same bytes") {
  int count = 0;
  for (const auto& dir : {kGolden + "/indexmaps", kGolden + "/blending"}) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() != ".npy") continue;
      const std::string bytes = read_bytes(e.path().string());
      NpyArray a = read_npy(e.path().string());
      CHECK(npy_header(a.dtype, a.shape) + as_string(a.data) == bytes);
      ++count;
    }
  }
  CHECK(count == 30);
}

TEST_CASE("npy write/read round trip for the index dtypes") {
  TempDir tmp;
  const std::vector<int16_t> i16 = {-3, 0, 32767};
  const std::vector<int32_t> i32 = {1, -2, 3, 4, 5, 6};
  const std::vector<int64_t> i64 = {int64_t{1} << 40, -1};
  const std::vector<uint32_t> u32 = {0xffffffffu, 0, 7};
  write_npy(tmp / "a.npy", NpyArray::from(i16));
  write_npy(tmp / "b.npy", NpyArray::from(i32, {3, 2}));
  write_npy(tmp / "c.npy", NpyArray::from(i64));
  write_npy(tmp / "d.npy", NpyArray::from(u32));
  NpyArray a = read_npy(tmp / "a.npy"), b = read_npy(tmp / "b.npy"), c = read_npy(tmp / "c.npy"),
           d = read_npy(tmp / "d.npy");
  CHECK(a.dtype == DType::Int16);
  CHECK(std::vector<int16_t>(a.as<int16_t>().begin(), a.as<int16_t>().end()) == i16);
  CHECK(b.shape == std::vector<uint64_t>{3, 2});
  CHECK(std::vector<int32_t>(b.as<int32_t>().begin(), b.as<int32_t>().end()) == i32);
  CHECK(std::vector<int64_t>(c.as<int64_t>().begin(), c.as<int64_t>().end()) == i64);
  CHECK(d.dtype == DType::UInt32);
  CHECK(std::vector<uint32_t>(d.as<uint32_t>().begin(), d.as<uint32_t>().end()) == u32);
  CHECK(read_bytes(tmp / "c.npy").size() == 128 + 16);
  // Typed access with the wrong type is refused.
  CHECK(tool_error([&] { (void)d.as<int32_t>(); }).find("uint32") != std::string::npos);
}

TEST_CASE("npy reader rejects malformed files, naming the field") {
  TempDir tmp;
  const std::string good = npy_header(DType::Int32, std::vector<uint64_t>{2}) + std::string(8, '\0');
  auto check = [&](std::string bytes, const char* field) {
    write_bytes(tmp / "x.npy", bytes);
    const std::string msg = tool_error([&] { read_npy(tmp / "x.npy"); });
    CHECK_MESSAGE(msg.find(field) != std::string::npos, msg);
  };
  check("NOTNUMPY" + good.substr(8), "magic");
  check(good.substr(0, good.size() - 1), "data");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  check(fortran, "fortran_order");
  std::string big = good;
  big.replace(big.find("<i4"), 3, ">i4");
  check(big, "descr");
  std::string v9 = good;
  v9[6] = 9;
  check(v9, "version");
}
