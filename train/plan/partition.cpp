#include "train/plan/partition.h"

#include <algorithm>
#include <limits>

#include "common/cli/error.h"

namespace plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int min_layers(size_t s, size_t count) { return count > 1 && (s == 0 || s + 1 == count) ? 0 : 1; }

bool fits(const std::vector<StageSpeed>& st, const std::vector<int>& k) {
  for (size_t s = 0; s < st.size(); ++s)
    if (k[s] < min_layers(s, st.size()) || k[s] > st[s].max_layers) return false;
  return true;
}

}  // namespace

double pipeline_ms(const std::vector<StageSpeed>& st, const std::vector<int>& k, int m) {
  double sum = 0, slowest = 0;
  for (size_t s = 0; s < st.size(); ++s) {
    const double compute = k[s] * st[s].layer_ms + st[s].extra_ms;
    const double p2p = s + 1 < st.size() ? st[s].p2p_ms : 0;
    sum += compute + p2p;
    slowest = std::max(slowest, compute + p2p);
  }
  return sum + (m - 1) * slowest;
}

std::vector<int> balanced_partition(const std::vector<StageSpeed>& st, int L, int m) {
  const size_t P = st.size();
  if (P == 0) return {};
  // best[s][l]: the smallest slowest-stage time of stages 0..s holding l layers.
  std::vector<std::vector<double>> best(P, std::vector<double>(L + 1, kInf));
  std::vector<std::vector<int>> take(P, std::vector<int>(L + 1, -1));
  auto cycle = [&](size_t s, int k) { return k * st[s].layer_ms + st[s].extra_ms + (s + 1 < P ? st[s].p2p_ms : 0); };
  for (size_t s = 0; s < P; ++s) {
    const int lo = min_layers(s, P), hi = std::min(L, st[s].max_layers);
    for (int l = 0; l <= L; ++l) {
      for (int k = lo; k <= std::min(hi, l); ++k) {
        const double prev = s == 0 ? (l == k ? 0 : kInf) : best[s - 1][l - k];
        if (prev == kInf) continue;
        // Ties go to the split that leaves more layers to later stages (fewer on the first).
        const double v = std::max(prev, cycle(s, k));
        if (v < best[s][l]) {
          best[s][l] = v;
          take[s][l] = k;
        }
      }
    }
  }
  if (best[P - 1][L] == kInf) return {};
  std::vector<int> k(P);
  for (int s = int(P) - 1, l = L; s >= 0; --s) {
    k[s] = take[s][l];
    l -= k[s];
  }
  // Single-layer moves on the true objective (the sum of the stages' times matters too when the
  // stages' GPU types differ).
  // Equal objectives are told apart by the spread of the stages' times (sum of squares), so that
  // of the partitions with the same slowest stage the most even one is kept.
  auto spread = [&](const std::vector<int>& kk) {
    double q = 0;
    for (size_t s = 0; s < P; ++s) q += cycle(s, kk[s]) * cycle(s, kk[s]);
    return q;
  };
  double cur = pipeline_ms(st, k, m), cur_spread = spread(k);
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t a = 0; a < P; ++a)
      for (size_t b = 0; b < P; ++b) {
        if (a == b || k[a] == 0) continue;
        --k[a];
        ++k[b];
        const double v = fits(st, k) ? pipeline_ms(st, k, m) : kInf;
        const double eps = 1e-9 * std::max(1.0, cur);
        const double q = v < kInf ? spread(k) : kInf;
        if (v < cur - eps || (v <= cur + eps && q < cur_spread - eps * cur)) {
          cur = v;
          cur_spread = q;
          moved = true;
        } else {
          ++k[a];
          --k[b];
        }
      }
  }
  return k;
}

std::vector<int> even_partition(int P, int L) {
  if (P < 1 || L % P != 0) return {};
  return std::vector<int>(P, L / P);
}

std::vector<int> parse_partition(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  for (;;) {
    const size_t dash = text.find('-', start);
    const std::string part = text.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos)
      throw suite::UsageError("--pipeline-partition must be layers per stage such as 0-11-8-8, got '" + text + "'");
    out.push_back(std::stoi(part));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  return out;
}

}  // namespace plan
