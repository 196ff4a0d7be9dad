// common/io/parallel_bz2 (used by wiki-extract): multistream bzip2 decoded on several threads reads
// exactly like the sequential decoder, and damage is reported the same way.
#include <bzlib.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/io/input.h"
#include "common/io/parallel_bz2.h"

namespace fs = std::filesystem;
using namespace suite;

namespace {

std::string compress(const std::string& plain) {
  std::vector<char> out(plain.size() + plain.size() / 50 + 1024);
  auto len = static_cast<unsigned>(out.size());
  REQUIRE(BZ2_bzBuffToBuffCompress(out.data(), &len, const_cast<char*>(plain.data()),
                                   static_cast<unsigned>(plain.size()), 9, 0, 0) == BZ_OK);
  return {out.data(), len};
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& contents) {
    char tmpl[] = "/tmp/suite-pbz2-XXXXXX";
    int fd = mkstemp(tmpl);
    ::close(fd);
    path = tmpl;
    std::ofstream(path, std::ios::binary) << contents;
  }
  ~TempFile() { fs::remove(path); }
};

std::string read_through(Input& in, size_t step) {
  std::string out;
  std::vector<char> buf(step);
  while (size_t got = in.read(buf.data(), buf.size())) out.append(buf.data(), got);
  return out;
}
std::string read_through(std::unique_ptr<Input> in, size_t step) { return read_through(*in, step); }

// `streams` parts of random-ish text (compresses to about half), each its own bzip2 stream.
void make_multistream(int streams, size_t part_bytes, std::string& plain, std::string& file) {
  std::mt19937 rng(7);
  for (int s = 0; s < streams; ++s) {
    std::string part;
    while (part.size() < part_bytes) part += static_cast<char>('a' + rng() % 26) + std::string(rng() % 3, ' ');
    plain += part;
    file += compress(part);
  }
}

}  // namespace

TEST_CASE("parallel bzip2: same bytes as the sequential reader, for any thread count and read size") {
  std::string plain, file;
  make_multistream(40, 150000, plain, file);  // about 3 MB compressed: several segments
  TempFile f(file);
  CHECK(read_through(open_input(f.path), 1 << 16) == plain);
  for (int threads : {2, 3, 8}) {
    auto in = open_input_parallel(f.path, threads);
    CHECK(std::string(in->format()) == "bzip2");
    CHECK(read_through(std::move(in), threads == 3 ? 777 : 1 << 20) == plain);
  }
}

TEST_CASE("parallel bzip2: progress counts compressed bytes up to the file size") {
  std::string plain, file;
  make_multistream(30, 150000, plain, file);
  TempFile f(file);
  auto in = open_input_parallel(f.path, 2);
  REQUIRE(in->raw_size().has_value());
  CHECK(*in->raw_size() == file.size());
  CHECK(in->raw_bytes_read() < file.size());
  CHECK(read_through(*in, 1 << 16) == plain);
  CHECK(in->raw_bytes_read() == file.size());
}

TEST_CASE("parallel bzip2: other inputs fall back to the sequential reader") {
  std::string plain = std::string(100000, 'x') + "end";
  TempFile single(compress(plain));  // one stream: nothing to split
  CHECK(read_through(open_input_parallel(single.path, 4), 1000) == plain);
  TempFile text(plain);
  auto in = open_input_parallel(text.path, 4);
  CHECK(std::string(in->format()) == "plain");
  CHECK(read_through(std::move(in), 1000) == plain);
}

TEST_CASE("parallel bzip2: truncated and corrupt files fail like the sequential reader") {
  std::string plain, file;
  make_multistream(40, 150000, plain, file);
  TempFile cut(file.substr(0, file.size() - 1000));
  try {
    read_through(open_input_parallel(cut.path, 3), 1 << 16);
    FAIL("expected an error");
  } catch (const ToolError& e) {
    CHECK(e.where() == cut.path);
    CHECK(std::string(e.what()) == "truncated bzip2 stream (unexpected end of file)");
  }
  std::string damaged = file;
  damaged[damaged.size() / 2] ^= 0x55;
  TempFile bad(damaged);
  CHECK_THROWS_AS(read_through(open_input_parallel(bad.path, 3), 1 << 16), ToolError);
  // Stopping early (an error downstream) shuts the decoder threads down cleanly.
  auto in = open_input_parallel(bad.path, 3);
  char buf[100];
  CHECK(in->read(buf, sizeof buf) == sizeof buf);
}
