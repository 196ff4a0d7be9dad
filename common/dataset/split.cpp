#include "common/dataset/split.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "common/cli/error.h"

namespace suite::dataset {

std::string_view split_name(SplitIndex s) {
  switch (s) {
    case SplitIndex::Train: return "train";
    case SplitIndex::Valid: return "valid";
    case SplitIndex::Test: return "test";
  }
  return "?";
}

namespace {

std::string_view strip(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// Python float() of a decimal string (no '_' digit separators, no hex).
double python_float(std::string_view part, std::string_view whole) {
  const std::string text(strip(part));
  char* end = nullptr;
  errno = 0;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || text.find_first_of("xX") != std::string::npos)
    throw ToolError("--split: '" + std::string(whole) + "': '" + std::string(part) + "' is not a number");
  if (!std::isfinite(v) || v < 0)
    throw ToolError("--split: '" + std::string(whole) + "': weights must be finite and non-negative");
  return v;
}

// Python round() to an integer: half to even (the default FE_TONEAREST mode of nearbyint).
int64_t python_round(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

}  // namespace

std::array<double, 3> parse_split_weights(std::string_view split) {
  std::vector<std::string_view> parts;
  const char sep = split.find(',') != std::string_view::npos ? ',' : (split.find('/') != std::string_view::npos ? '/' : '\0');
  if (sep == '\0') {
    parts.push_back(split);
  } else {
    size_t start = 0;
    while (true) {
      auto pos = split.find(sep, start);
      parts.push_back(split.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
      if (pos == std::string_view::npos) break;
      start = pos + 1;
    }
  }
  std::array<double, 3> w{0.0, 0.0, 0.0};
  for (size_t i = 0; i < parts.size(); ++i) {
    const double v = python_float(parts[i], split);  // every part must parse, as in Python
    if (i < 3) w[i] = v;
  }
  const double total = w[0] + w[1] + w[2];
  if (!(total > 0.0)) throw ToolError("--split: '" + std::string(split) + "': the weights sum to 0");
  for (double& x : w) x /= total;
  return w;
}

std::array<uint64_t, 4> split_boundaries_legacy(std::string_view split, uint64_t num_sequences) {
  const auto w = parse_split_weights(split);
  std::array<int64_t, 4> idx{0, 0, 0, 0};
  for (int i = 0; i < 3; ++i) idx[i + 1] = idx[i] + python_round(w[i] * static_cast<double>(num_sequences));
  const int64_t diff = idx[3] - static_cast<int64_t>(num_sequences);
  for (int i = 1; i < 4; ++i) idx[i] -= diff;
  std::array<uint64_t, 4> out{};
  for (int i = 0; i < 4; ++i) {
    // Rounding can only push an inner boundary below 0 for absurd inputs; clamp like an empty split.
    out[i] = idx[i] < 0 ? 0 : static_cast<uint64_t>(idx[i]);
  }
  return out;
}

SequenceRange split_range_legacy(std::string_view split, uint64_t num_sequences, SplitIndex which) {
  const auto b = split_boundaries_legacy(split, num_sequences);
  const auto i = static_cast<size_t>(which);
  if (b[i + 1] <= b[i]) return {b[i], b[i]};
  return {b[i], b[i + 1]};
}

std::array<CoreSplit, 3> split_ranges_core(std::string_view split, uint64_t num_sequences) {
  std::vector<double> w;
  for (size_t i = 0; i < split.size();) {
    if ((split[i] >= '0' && split[i] <= '9') || split[i] == '.') {
      size_t j = i;
      while (j < split.size() && ((split[j] >= '0' && split[j] <= '9') || split[j] == '.')) ++j;
      w.push_back(python_float(split.substr(i, j - i), split));
      i = j;
    } else {
      ++i;
    }
  }
  w.resize(3, 0.0);
  const double total = w[0] + w[1] + w[2];  // numpy.sum of 3 values: sequential
  if (!(total > 0.0)) throw ToolError("--split: '" + std::string(split) + "': the weights sum to 0");
  for (double& x : w) x /= total;
  const double c[4] = {0.0, w[0], w[0] + w[1], w[0] + w[1] + w[2]};
  std::array<CoreSplit, 3> out{};
  const auto n = static_cast<double>(num_sequences);
  for (int i = 0; i < 3; ++i) {
    if (c[i + 1] <= c[i]) continue;
    out[i].exists = true;
    out[i].range = {static_cast<uint64_t>(python_round(c[i] * n)), static_cast<uint64_t>(python_round(c[i + 1] * n))};
  }
  return out;
}

SplitRounding parse_split_rounding(std::string_view name) {
  if (name == "legacy") return SplitRounding::Legacy;
  if (name == "core") return SplitRounding::Core;
  throw ToolError("--split-rounding must be legacy or core, got '" + std::string(name) + "'");
}

SequenceRange split_range(std::string_view split, uint64_t num_sequences, SplitIndex which, SplitRounding rounding) {
  if (rounding == SplitRounding::Legacy) return split_range_legacy(split, num_sequences, which);
  const CoreSplit c = split_ranges_core(split, num_sequences)[static_cast<size_t>(which)];
  return c.exists ? c.range : SequenceRange{};
}

}  // namespace suite::dataset
