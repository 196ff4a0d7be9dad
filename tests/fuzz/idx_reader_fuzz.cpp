// libFuzzer target: arbitrary bytes as a .idx next to a fixed 12-byte .bin must either open
// cleanly (and then every accessor stays inside the mappings) or fail with a ToolError.
// fuzz-sources: common/cli common/dataset common/io common/jsonl common/progress common/tokenizer common/unicode
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/cli/error.h"
#include "common/dataset/indexed_dataset.h"

namespace {

std::string g_scratch_dir;

void remove_scratch() {
  ::unlink((g_scratch_dir + "/x.idx").c_str());
  ::unlink((g_scratch_dir + "/x.bin").c_str());
  ::rmdir(g_scratch_dir.c_str());
}

// A private directory holding x.bin (12 bytes, as in the seed corpus) and x.idx (rewritten per input).
const std::string& scratch_prefix() {
  static const std::string prefix = [] {
    // tmpfs when available: the target rewrites the .idx for every input.
    const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string dir = std::string(base) + "/idx-reader-fuzz-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) std::abort();
    g_scratch_dir = dir;
    const std::string p = dir + "/x";
    FILE* bin = std::fopen((p + ".bin").c_str(), "wb");
    const unsigned char data[12] = {0x88, 0x3c, 0xe3, 0x03, 0x50, 0xc4, 0x28, 0x00, 0x32, 0x07, 0x50, 0xc4};
    std::fwrite(data, 1, sizeof data, bin);
    std::fclose(bin);
    std::atexit(remove_scratch);
    return p;
  }();
  return prefix;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& prefix = scratch_prefix();
  FILE* idx = std::fopen((prefix + ".idx").c_str(), "wb");
  if (idx == nullptr) std::abort();
  if (size > 0) std::fwrite(data, 1, size, idx);
  std::fclose(idx);
  try {
    suite::dataset::IndexedDataset ds(prefix);
    // Touch everything the reader promises is in bounds.
    uint64_t sum = 0;
    for (uint64_t i = 0; i < ds.sequence_count(); ++i) {
      sum += static_cast<uint64_t>(ds.sequence_pointer(i));
      for (std::byte b : ds.sequence_bytes(i)) sum += static_cast<uint64_t>(b);
      if (ds.has_modes()) sum += static_cast<uint64_t>(ds.mode(i));
    }
    for (uint64_t d = 0; d < ds.document_index_size(); ++d) sum += static_cast<uint64_t>(ds.document_index(d));
    if (sum == 0xdeadbeef) std::fputc('.', stderr);  // keep the loop from being optimised away
  } catch (const suite::ToolError&) {
  }
  return 0;
}
