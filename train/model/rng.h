// Small, portable random numbers (the C++ distributions are not the same across standard libraries,
// and runs must reproduce everywhere): splitmix64 streams and Box-Muller normals.
#pragma once

#include <cmath>
#include <cstdint>

namespace gpt {

inline constexpr uint64_t kSplitmixIncrement = 0x9E3779B97F4A7C15ull;

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += kSplitmixIncrement);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A stream keyed by several integers (seed, purpose, index, ...).
inline uint64_t stream_key(uint64_t a, uint64_t b, uint64_t c = 0) {
  uint64_t s = a;
  uint64_t k = splitmix64(s) ^ (b * 0xD1B54A32D192ED03ull);
  s = k;
  k = splitmix64(s) ^ (c * 0x8CB92BA72F3D8DD7ull);
  s = k;
  return splitmix64(s);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // The stream `seed` after `draws` calls of next(): splitmix64 is a counter, so any position is
  // one multiplication away (threads fill disjoint pieces of one stream).
  static Rng at(uint64_t seed, uint64_t draws) { return Rng(seed + draws * kSplitmixIncrement); }
  uint64_t next() { return splitmix64(state_); }
  // Uniform in [0, n) (multiply-shift; bias is negligible for vocabulary-sized n).
  uint32_t below(uint32_t n) { return uint32_t((next() >> 32) * uint64_t(n) >> 32); }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace gpt
