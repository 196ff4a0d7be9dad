#include "common/dataset/blending.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/cli/error.h"

namespace suite::dataset {

namespace {

std::string strip(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(ws) - b + 1));
}

double parse_weight(const std::string& word) {
  const std::string text = strip(word);
  char* end = nullptr;
  errno = 0;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || text.find_first_of("xX") != std::string::npos)
    throw ToolError("--data-path: '" + word + "' is not a weight (expected 'WEIGHT PREFIX' pairs)");
  if (!std::isfinite(v) || v < 0) throw ToolError("--data-path: weight '" + word + "' must be finite and non-negative");
  return v;
}

double pairwise(const double* a, size_t n) {
  if (n < 8) {
    double res = -0.0;
    for (size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int k = 0; k < 8; ++k) r[k] += a[i + k];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

}  // namespace

bool words_are_weighted(std::span<const std::string> words) {
  if (words.size() < 2 || words.size() % 2 != 0) return false;
  for (size_t i = 0; i < words.size(); i += 2) {
    try {
      (void)parse_weight(words[i]);
    } catch (const ToolError&) {
      return false;
    }
  }
  return true;
}

std::vector<BlendComponent> parse_prefixes(std::span<const std::string> words) {
  if (words.empty()) throw ToolError("--data-path: no dataset given");
  std::vector<BlendComponent> out;
  for (const auto& w : words) out.push_back({0.0, strip(w)});
  return out;
}

std::vector<BlendComponent> parse_blend(std::span<const std::string> words) {
  if (words.empty()) throw ToolError("--data-path: no dataset given");
  if (words.size() == 1) return {{1.0, strip(words[0])}};
  if (words.size() % 2 != 0)
    throw ToolError("--data-path: " + std::to_string(words.size()) +
                    " words; a blend needs 'WEIGHT PREFIX' pairs (an even count)");
  std::vector<BlendComponent> out;
  double total = 0.0;
  for (size_t i = 0; i < words.size(); i += 2) {
    out.push_back({parse_weight(words[i]), strip(words[i + 1])});
    total += out.back().weight;
  }
  if (!(total > 0.0)) throw ToolError("--data-path: the blend weights sum to 0");
  return out;
}

std::vector<BlendComponent> parse_blend(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i) words.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return parse_blend(std::span<const std::string>(words));
}

double numpy_sum(std::span<const double> values) { return 0.0 + pairwise(values.data(), values.size()); }

std::vector<double> normalize_weights_python(std::span<const double> weights) {
  double total = 0.0;
  for (double w : weights) total += w;
  if (!(total > 0.0)) throw ToolError("--data-path: the blend weights sum to 0");
  std::vector<double> out;
  for (double w : weights) out.push_back(w / total);
  return out;
}

std::vector<double> normalize_weights_numpy(std::span<const double> weights) {
  const double total = numpy_sum(weights);
  if (!(total > 0.0)) throw ToolError("--data-path: the blend weights sum to 0");
  std::vector<double> out;
  for (double w : weights) out.push_back(w / total);
  return out;
}

std::vector<uint64_t> blend_component_samples(uint64_t num_samples, std::span<const double> normalized_weights) {
  std::vector<uint64_t> out;
  for (double w : normalized_weights)
    out.push_back(static_cast<uint64_t>(std::ceil(static_cast<double>(num_samples) * w * 1.005)));
  return out;
}

std::vector<uint64_t> blend_component_targets(uint64_t num_samples, std::span<const double> normalized_weights) {
  std::vector<uint64_t> out;
  for (double w : normalized_weights)
    out.push_back(static_cast<uint64_t>(std::ceil(static_cast<double>(num_samples) * w)));
  return out;
}

std::vector<uint64_t> blend_component_samples_core(std::span<const uint64_t> targets, double surplus) {
  // Python's 1 + surplus, not the literal 1.005: the two doubles need not be the same.
  const double factor = 1.0 + surplus;
  std::vector<uint64_t> out;
  for (uint64_t t : targets) out.push_back(static_cast<uint64_t>(std::ceil(static_cast<double>(t) * factor)));
  return out;
}

BlendingIndices build_blending_indices(std::span<const double> weights, uint64_t size) {
  const size_t n = weights.size();
  if (n == 0) throw ToolError("--data-path: a blend needs at least one dataset");
  if (n > static_cast<size_t>(std::numeric_limits<int16_t>::max()))
    throw ToolError("--data-path: " + std::to_string(n) + " datasets; blending supports at most 32767");
  BlendingIndices out;
  out.dataset_index.resize(size);
  out.dataset_sample_index.resize(size);
  std::vector<int64_t> current(n, 0);
  for (uint64_t s = 0; s < size; ++s) {
    const double x = std::max(static_cast<double>(s), 1.0);
    size_t best = 0;
    double best_err = weights[0] * x - static_cast<double>(current[0]);
    for (size_t d = 1; d < n; ++d) {
      const double err = weights[d] * x - static_cast<double>(current[d]);
      if (err > best_err) {
        best = d;
        best_err = err;
      }
    }
    out.dataset_index[s] = static_cast<int16_t>(best);
    out.dataset_sample_index[s] = current[best];
    ++current[best];
  }
  return out;
}

BlendPlan plan_sized_blend(std::span<const uint64_t> component_sizes, uint64_t num_samples) {
  std::vector<double> sizes;
  uint64_t total = 0;
  for (uint64_t n : component_sizes) {
    sizes.push_back(static_cast<double>(n));
    total += n;
  }
  BlendPlan p;
  p.weights = normalize_weights_numpy(sizes);
  p.blend_weights = p.weights;
  p.component_samples.assign(component_sizes.begin(), component_sizes.end());
  p.size = std::min(num_samples, total);
  return p;
}

BlendPlan plan_blend(std::span<const BlendComponent> components, uint64_t num_samples, SplitRounding rounding,
                     double surplus) {
  std::vector<double> raw;
  for (const auto& c : components) raw.push_back(c.weight);
  BlendPlan p;
  if (rounding == SplitRounding::Core) {
    p.weights = normalize_weights_numpy(raw);
    const std::vector<uint64_t> targets = blend_component_targets(num_samples, p.weights);
    p.component_samples = blend_component_samples_core(targets, surplus);
    for (uint64_t t : targets) p.size += t;
  } else {
    p.weights = normalize_weights_python(raw);
    p.component_samples = blend_component_samples(num_samples, p.weights);
    for (uint64_t c : p.component_samples) p.size += c;
  }
  p.blend_weights = normalize_weights_numpy(p.weights);
  return p;
}

}  // namespace suite::dataset
