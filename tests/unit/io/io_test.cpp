// common/io: inputs by magic bytes, atomic outputs, line chunks.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/cli/error.h"
#include "common/io/input.h"
#include "common/io/line_chunker.h"
#include "common/io/output.h"

namespace fs = std::filesystem;
using namespace suite;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/suite-io-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const char* name) const { return (path / name).string(); }
};

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string sample_text() {
  std::string s;
  for (int i = 0; i < 20000; ++i) s += "{\"text\":\"line " + std::to_string(i) + "\"}\n";
  return s;
}
}  // namespace

TEST_CASE("compressed outputs read back identically, whatever the file is called") {
  TempDir dir;
  std::string text = sample_text();
  for (const char* name : {"a.jsonl", "a.jsonl.zst", "a.jsonl.xz"}) {
    auto out = open_output(dir.file(name));
    out->write(text);
    out->close();
    CHECK(read_all(dir.file(name)) == text);
  }
  // Detection is by content: a zstd file without the extension is still decompressed.
  fs::rename(dir.file("a.jsonl.zst"), dir.file("plain-name.txt"));
  auto in = open_input(dir.file("plain-name.txt"));
  CHECK(std::string(in->format()) == "zstd");
  CHECK(slurp(dir.file("a.jsonl.xz")).substr(0, 6) == std::string("\xFD" "7zXZ\0", 6));
}

TEST_CASE("a truncated compressed file is an error naming the file") {
  TempDir dir;
  std::string text = sample_text();
  auto out = open_output(dir.file("t.zst"));
  out->write(text);
  out->close();
  std::string bytes = slurp(dir.file("t.zst"));
  std::ofstream(dir.file("cut.zst"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  try {
    read_all(dir.file("cut.zst"));
    FAIL("no error");
  } catch (const ToolError& e) {
    CHECK(e.where() == dir.file("cut.zst"));
    CHECK(std::string(e.what()).find("truncated zstd") != std::string::npos);
  }
}

TEST_CASE("an output that is never closed leaves nothing behind") {
  TempDir dir;
  {
    auto out = open_output(dir.file("partial.jsonl"));
    out->write("{\"text\":\"x\"}\n");
  }
  CHECK(fs::is_empty(dir.path));
  auto out = open_output(dir.file("done.jsonl"));
  out->write("x");
  CHECK(!fs::exists(dir.file("done.jsonl")));  // not visible until closed
  out->close();
  CHECK(slurp(dir.file("done.jsonl")) == "x");
}

TEST_CASE("line chunks hold whole lines with numbers, padding, and a final newline") {
  TempDir dir;
  std::string text = sample_text();
  text.pop_back();  // last line without '\n'
  std::ofstream(dir.file("in.jsonl"), std::ios::binary) << text;
  LineChunker chunker({dir.file("in.jsonl"), dir.file("in.jsonl")}, 4096, 1 << 20, false);
  LineChunk chunk;
  std::string joined;
  uint64_t expect_line = 1;
  int inputs_seen = 0;
  while (chunker.next(chunk)) {
    if (chunk.first_line == 1) {
      ++inputs_seen;
      expect_line = 1;
    }
    CHECK(chunk.first_line == expect_line);
    CHECK(chunk.text().back() == '\n');
    CHECK(chunk.buf.size() >= chunk.len + kChunkPadding);
    expect_line += chunk.line_count;
    joined += chunk.text();
  }
  CHECK(inputs_seen == 2);
  CHECK(joined == text + "\n" + text + "\n");
  CHECK(chunker.total_raw_size() == 2 * text.size());
}

TEST_CASE("a line longer than the limit fails with its number, or is skipped") {
  TempDir dir;
  std::string text = "{\"a\":1}\n" + std::string(100000, 'x') + "\n{\"b\":2}\n";
  std::ofstream(dir.file("long.jsonl"), std::ios::binary) << text;
  LineChunk chunk;
  LineChunker strict({dir.file("long.jsonl")}, 4096, 50000, false);
  CHECK_THROWS_WITH_AS((void)[&] { while (strict.next(chunk)) {} }(), doctest::Contains("line longer than 50000"), ToolError);
  LineChunker lenient({dir.file("long.jsonl")}, 4096, 50000, true);
  std::string kept;
  std::vector<uint64_t> skipped;
  while (lenient.next(chunk)) {
    kept += chunk.text();
    skipped.insert(skipped.end(), chunk.skipped_long_lines.begin(), chunk.skipped_long_lines.end());
  }
  CHECK(kept == "{\"a\":1}\n{\"b\":2}\n");
  CHECK(skipped == std::vector<uint64_t>{2});
}
