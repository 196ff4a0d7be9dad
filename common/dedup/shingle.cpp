#include "common/dedup/shingle.h"

#include <xxhash.h>

#include <algorithm>

#include "common/cli/error.h"

namespace suite::dedup {

ShingleKind parse_shingle_kind(std::string_view name) {
  if (name == "word") return ShingleKind::kWord;
  if (name == "char") return ShingleKind::kChar;
  throw UsageError("--shingle must be word or char, got '" + std::string(name) + "'");
}

const char* shingle_kind_name(ShingleKind kind) { return kind == ShingleKind::kWord ? "word" : "char"; }

namespace {

// Start offsets of the units (words or code points) plus, at the end, the end of the last unit.
thread_local std::vector<uint32_t> g_starts, g_ends;

}  // namespace

void shingle_hashes(std::string_view text, const ShingleOptions& options, std::vector<uint64_t>& out) {
  out.clear();
  const size_t n = static_cast<size_t>(options.n);
  auto& starts = g_starts;
  auto& ends = g_ends;
  starts.clear();
  ends.clear();
  const char* p = text.data();
  const size_t len = text.size();
  if (options.kind == ShingleKind::kWord) {
    size_t i = 0;
    while (i < len) {
      while (i < len && p[i] == ' ') ++i;
      if (i >= len) break;
      size_t s = i;
      while (i < len && p[i] != ' ') ++i;
      starts.push_back(static_cast<uint32_t>(s));
      ends.push_back(static_cast<uint32_t>(i));
    }
  } else {
    for (size_t i = 0; i < len; ++i)
      if ((static_cast<unsigned char>(p[i]) & 0xC0) != 0x80) {
        if (!starts.empty()) ends.push_back(static_cast<uint32_t>(i));
        starts.push_back(static_cast<uint32_t>(i));
      }
    if (!starts.empty()) ends.push_back(static_cast<uint32_t>(len));
  }
  if (starts.size() < n || n == 0) return;
  out.reserve(starts.size() - n + 1);
  for (size_t k = 0; k + n <= starts.size(); ++k) {
    size_t b = starts[k], e = ends[k + n - 1];
    out.push_back(XXH3_64bits_withSeed(p + b, e - b, options.seed));
  }
}

void shingle_set(std::string_view text, const ShingleOptions& options, std::vector<uint64_t>& out) {
  shingle_hashes(text, options, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

double jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  if (a.empty() && b.empty()) return 0.0;
  size_t i = 0, j = 0, common = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] < b[j]) ++i;
    else if (b[j] < a[i]) ++j;
    else {
      ++common;
      ++i;
      ++j;
    }
  }
  return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

}  // namespace suite::dedup
