// Seeded random inputs of the unit tests, the GPU tests and the per-operation benchmarks: the
// same seed gives the same values everywhere (std::mt19937 and the standard distributions).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace random_inputs {

// n values drawn from N(0, scale²).
inline std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// n integers uniform in [0, hi).
inline std::vector<int> randint(size_t n, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, hi - 1);
  std::vector<int> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace random_inputs
