// Progress on stderr in the form Megatron users know:
//   Processed 120000 documents (40123 docs/s, 153.2 MB/s). 38% ETA 0:00:41
// printed at most every `interval` seconds, and one final summary line per tool run:
//   bpe-encode: 14805 documents, 3.6 MB in 0.41 s (8.8 MB/s): kept 14804, skipped: invalid JSON 1
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/progress/counters.h"

namespace suite {

class Progress {
 public:
  Progress(bool quiet, std::optional<uint64_t> total_raw_bytes = std::nullopt, double interval_seconds = 2.0);

  // Called with running totals; prints when the interval has passed.
  void update(uint64_t documents, uint64_t bytes, uint64_t raw_bytes_read = 0);
  // Like update, but for tools that count something other than documents ("merges", "samples").
  void update_items(const char* what, uint64_t items, uint64_t total_items = 0);
  double elapsed_seconds() const;

  // The final line: `tool: N documents, X MB in T s (R MB/s): name count, ...`. Printed even with
  // --quiet when something was skipped or replaced (losing data is never silent).
  void summary(uint64_t documents, uint64_t bytes, const Counters& counts) const;

 private:
  bool due();
  bool quiet_;
  std::optional<uint64_t> total_raw_;
  double interval_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

// "1:02:03" style duration.
std::string format_duration(double seconds);

}  // namespace suite
