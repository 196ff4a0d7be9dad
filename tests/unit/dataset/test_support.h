// Helpers shared by the dataset unit tests: golden file paths, scratch directories, file bytes,
// and capturing a ToolError's message.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>

#include "common/cli/error.h"

namespace dataset_test {

// Tests run from the repository root (make unit-test).
inline const std::string kGolden = "tests/data/golden/megatron";
inline const std::string kGoldenPrefix = kGolden + "/fortunes-en_text_document";

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string as_string(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dataset-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs f, which must throw suite::ToolError; returns "where: what".
template <typename F>
std::string tool_error(F&& f) {
  try {
    f();
  } catch (const suite::ToolError& e) {
    return e.where() + ": " + e.what();
  }
  FAIL("expected a ToolError");
  return {};
}

}  // namespace dataset_test
