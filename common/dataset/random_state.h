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

  // One tempered MT19937 output (tempering is done a block at a time in generate()).
  uint32_t next_uint32() {
    if (pos_ == kN) generate();
    return output_[pos_++];
  }
  // Two outputs, the first as the high word (randomkit rk_uint64).
  uint64_t next_uint64() {
    const uint64_t hi = next_uint32();
    return (hi << 32) | next_uint32();
  }

  // Uniform integer in [0, max] (randomkit rk_interval); max == 0 consumes no draw.
  uint64_t random_interval(uint64_t max) {
    if (max == 0) return 0;
    const uint64_t mask = mask_for(max);
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
    constexpr size_t kBlock = 256, kAhead = 64;
    size_t i = x.size();
    if (i <= 1) return;
    --i;
    uint64_t js[kBlock];
    while (i >= 1) {
      const size_t m = std::min(kBlock, i);
      descending_intervals(i, m, js);
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

  // js[k] = random_interval(top - k) for k in [0, m), requires m <= top. Same draws as the
  // plain calls; for 32-bit bounds the rejection loop runs without unpredictable branches.
  void descending_intervals(uint64_t top, size_t m, uint64_t* js) {
    if (top > 0xffffffffu) {
      for (size_t k = 0; k < m; ++k) js[k] = random_interval(top - k);
      return;
    }
    size_t k = 0;
    while (k < m) {
      const uint64_t max = top - k;
      const uint64_t v = next_uint32() & mask_for(max);
      js[k] = v;
      k += v <= max;  // a rejected draw is overwritten by the next one
    }
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
  // Smallest 2^k - 1 >= max (max > 0): the rk_interval mask.
  static uint64_t mask_for(uint64_t max) { return ~uint64_t{0} >> __builtin_clzll(max); }
  RandomState() = default;
  void init_genrand(uint32_t seed);
  void generate();

  std::array<uint32_t, kN> state_{};
  std::array<uint32_t, kN> output_{};  // tempered state_, filled by generate() (vectorisable)
  int pos_ = kN;
};

}  // namespace suite::dataset
