#include "common/dedup/minhash.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace suite::dedup {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double s_curve(double s, BandsRows br) { return 1.0 - std::pow(1.0 - std::pow(s, br.rows), br.bands); }

namespace {
double integrate(double lo, double hi, BandsRows br, bool false_negative) {
  const int steps = 200;
  double h = (hi - lo) / steps, sum = 0;
  for (int i = 0; i < steps; ++i) {
    double x = lo + (i + 0.5) * h;
    double p = s_curve(x, br);
    sum += (false_negative ? 1.0 - p : p) * h;
  }
  return sum;
}
}  // namespace

BandsRows choose_bands_rows(double threshold, int num_perm) {
  BandsRows best{1, 1};
  double best_err = std::numeric_limits<double>::infinity();
  for (int b = 1; b <= num_perm; ++b)
    for (int r = 1; b * r <= num_perm; ++r) {
      BandsRows br{b, r};
      double err = 0.5 * integrate(0.0, threshold, br, false) + 0.5 * integrate(threshold, 1.0, br, true);
      if (err < best_err - 1e-12) {
        best_err = err;
        best = br;
      }
    }
  return best;
}

std::string describe_s_curve(BandsRows br) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "b×r = %d×%d (%d hashes), S-curve midpoint (1/b)^(1/r) = %.3f; P(candidate) at J =",
                br.bands, br.rows, br.bands * br.rows, std::pow(1.0 / br.bands, 1.0 / br.rows));
  std::string s = buf;
  for (double j : {0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95}) {
    std::snprintf(buf, sizeof buf, " %.2f:%.3f", j, s_curve(j, br));
    s += buf;
  }
  return s;
}

MinHasher::MinHasher(BandsRows br, uint64_t seed) : br_(br) {
  uint64_t state = seed ^ 0x6D696E6861736821ull;  // "minhash!"
  a_.resize(num_perm());
  b_.resize(num_perm());
  for (int i = 0; i < num_perm(); ++i) {
    a_[i] = splitmix64(state) | 1u;
    b_[i] = splitmix64(state);
  }
}

void MinHasher::signature(std::span<const uint64_t> shingles, std::vector<uint64_t>& sig) const {
  const size_t k = a_.size();
  sig.assign(k, std::numeric_limits<uint64_t>::max());
  uint64_t* m = sig.data();
  const uint64_t* a = a_.data();
  const uint64_t* b = b_.data();
  // Blocks of 4 shingles per pass over the permutations keep a, b and the minima in cache/registers.
  size_t i = 0;
  const size_t n = shingles.size();
  for (; i + 4 <= n; i += 4) {
    const uint64_t x0 = shingles[i], x1 = shingles[i + 1], x2 = shingles[i + 2], x3 = shingles[i + 3];
    for (size_t j = 0; j < k; ++j) {
      uint64_t h0 = a[j] * x0 + b[j], h1 = a[j] * x1 + b[j], h2 = a[j] * x2 + b[j], h3 = a[j] * x3 + b[j];
      uint64_t lo = std::min(std::min(h0, h1), std::min(h2, h3));
      m[j] = std::min(m[j], lo);
    }
  }
  for (; i < n; ++i) {
    const uint64_t x = shingles[i];
    for (size_t j = 0; j < k; ++j) m[j] = std::min(m[j], a[j] * x + b[j]);
  }
}

void MinHasher::band_hashes(std::span<const uint64_t> sig, std::span<uint64_t> bands) const {
  for (int j = 0; j < br_.bands; ++j)
    bands[j] = XXH3_64bits_withSeed(sig.data() + static_cast<size_t>(j) * br_.rows, sizeof(uint64_t) * br_.rows,
                                    static_cast<uint64_t>(j));
}

}  // namespace suite::dedup
