#include "common/progress/progress.h"

#include <cstdio>

#include "common/cli/error.h"

namespace suite {

using Clock = std::chrono::steady_clock;

Progress::Progress(bool quiet, std::optional<uint64_t> total_raw_bytes, double interval_seconds)
    : quiet_(quiet), total_raw_(total_raw_bytes), interval_(interval_seconds), start_(Clock::now()), last_(start_) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

bool Progress::due() {
  if (quiet_) return false;
  auto now = Clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_) return false;
  last_ = now;
  return true;
}

std::string format_duration(double seconds) {
  if (seconds < 0) seconds = 0;
  auto s = static_cast<uint64_t>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
                static_cast<unsigned long long>(s / 60 % 60), static_cast<unsigned long long>(s % 60));
  return buf;
}

void Progress::update(uint64_t documents, uint64_t bytes, uint64_t raw_bytes_read) {
  if (!due()) return;
  double t = elapsed_seconds();
  std::string eta;
  if (total_raw_ && *total_raw_ > 0 && raw_bytes_read > 0) {
    double frac = static_cast<double>(raw_bytes_read) / static_cast<double>(*total_raw_);
    if (frac > 1) frac = 1;
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.0f%% ETA %s", frac * 100, format_duration(t / frac - t).c_str());
    eta = buf;
  }
  std::fprintf(stderr, "Processed %llu documents (%.0f docs/s, %.1f MB/s).%s\n",
               static_cast<unsigned long long>(documents), documents / t, bytes / t / 1e6, eta.c_str());
}

void Progress::update_items(const char* what, uint64_t items, uint64_t total_items) {
  if (!due()) return;
  double t = elapsed_seconds();
  if (total_items > 0) {
    double frac = static_cast<double>(items) / static_cast<double>(total_items);
    std::fprintf(stderr, "Processed %llu/%llu %s (%.0f %s/s). %.0f%% ETA %s\n", static_cast<unsigned long long>(items),
                 static_cast<unsigned long long>(total_items), what, items / t, what, frac * 100,
                 format_duration(frac > 0 ? t / frac - t : 0).c_str());
  } else {
    std::fprintf(stderr, "Processed %llu %s (%.0f %s/s).\n", static_cast<unsigned long long>(items), what, items / t,
                 what);
  }
}

void Progress::summary(uint64_t documents, uint64_t bytes, const Counters& counts) const {
  bool has_problems = false;
  for (const auto& [name, n] : counts.items())
    if (name.rfind("skipped", 0) == 0 || name.rfind("replaced", 0) == 0) has_problems = has_problems || n > 0;
  // Skips and repairs are reported even with --quiet: losing data is never silent.
  if (quiet_ && !has_problems) return;
  double t = elapsed_seconds();
  std::string line = tool_name() + ": " + std::to_string(documents) + " documents, ";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f MB in %.2f s (%.1f MB/s)", bytes / 1e6, t, t > 0 ? bytes / t / 1e6 : 0.0);
  line += buf;
  const char* sep = ": ";
  for (const auto& [name, n] : counts.items()) {
    line += sep + name + " " + std::to_string(n);
    sep = ", ";
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace suite
