// numpy's legacy `numpy.random.RandomState`, bit for bit, for the calls Megatron makes:
// seeding with an integer (init_genrand) or a key array (init_by_array), the MT19937 stream,
// bounded integers by masked rejection (`rk_interval`), `shuffle` of a 1-D array (Fisher-Yates
// from the end), `permutation` and `randint`. std::shuffle / uniform_int_distribution do not
// reproduce these streams.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace suite::dataset {

class RandomState {
 public:
  // RandomState(seed) for an integer seed in [0, 2^32): MT19937 init_genrand.
  explicit RandomState(uint32_t seed);
  // RandomState(array_of_uint32): MT19937 init_by_array.
  static RandomState from_key(std::span<const uint32_t> key);

  // One tempered MT19937 output.
  uint32_t next_uint32() {
    if (pos_ == kN) generate();
    uint32_t y = state_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }
  // Two outputs, the first as the high word (randomkit rk_uint64).
  uint64_t next_uint64() {
    const uint64_t hi = next_uint32();
    return (hi << 32) | next_uint32();
  }

  // Uniform integer in [0, max] (randomkit rk_interval); max == 0 consumes no draw.
  uint64_t random_interval(uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    uint64_t v;
    if (max <= 0xffffffffu) {
      while ((v = (next_uint32() & mask)) > max) {
      }
    } else {
      while ((v = (next_uint64() & mask)) > max) {
      }
    }
    return v;
  }

  // numpy shuffle of a 1-D array: for i = n-1 down to 1, swap x[i] with x[random_interval(i)].
  // The draws do not depend on the data, so they are made a block ahead and the targets
  // prefetched (the swaps are random accesses into arrays far larger than the caches).
  template <typename T>
  void shuffle(std::span<T> x) {
    constexpr size_t kBlock = 64, kAhead = 16;
    size_t i = x.size();
    if (i <= 1) return;
    --i;
    size_t js[kBlock];
    while (i >= 1) {
      const size_t m = std::min(kBlock, i);
      for (size_t k = 0; k < m; ++k) js[k] = static_cast<size_t>(random_interval(i - k));
      for (size_t k = 0; k < std::min(m, kAhead); ++k) __builtin_prefetch(&x[js[k]], 1);
      for (size_t k = 0; k < m; ++k) {
        if (k + kAhead < m) __builtin_prefetch(&x[js[k + kAhead]], 1);
        std::swap(x[i - k], x[js[k]]);
      }
      i -= m;
    }
  }
  template <typename T>
  void shuffle(std::vector<T>& x) {
    shuffle(std::span<T>(x));
  }

  // permutation(n): arange(n) (int64) shuffled.
  std::vector<int64_t> permutation(int64_t n);
  // permutation(array): a shuffled copy.
  template <typename T>
  std::vector<T> permutation(std::span<const T> x) {
    std::vector<T> out(x.begin(), x.end());
    shuffle(std::span<T>(out));
    return out;
  }

  // randint(low, high, size=count) with the default int64 dtype: values in [low, high).
  // Throws ToolError when low >= high (numpy: ValueError).
  std::vector<int64_t> randint(int64_t low, int64_t high, size_t count);

 private:
  static constexpr int kN = 624;
  RandomState() = default;
  void init_genrand(uint32_t seed);
  void generate();

  std::array<uint32_t, kN> state_{};
  int pos_ = kN;
};

}  // namespace suite::dataset
