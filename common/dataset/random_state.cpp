#include "common/dataset/random_state.h"

#include <string>

#include "common/cli/error.h"

namespace suite::dataset {

namespace {
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpper = 0x80000000u;
constexpr uint32_t kLower = 0x7fffffffu;
}  // namespace

RandomState::RandomState(uint32_t seed) { init_genrand(seed); }

void RandomState::init_genrand(uint32_t seed) {
  state_[0] = seed;
  for (int i = 1; i < kN; ++i)
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  pos_ = kN;
}

RandomState RandomState::from_key(std::span<const uint32_t> key) {
  // Matsumoto & Nishimura's init_by_array (mt19937ar.c), as numpy's mt19937_init_by_array.
  RandomState rs;
  rs.init_genrand(19650218u);
  auto& mt = rs.state_;
  int i = 1;
  size_t j = 0;
  const size_t len = key.size();
  for (size_t k = std::max<size_t>(kN, len); k > 0; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + (len ? key[j] : 0u) + static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt[0] = mt[kN - 1];
      i = 1;
    }
    if (j >= len) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt[0] = mt[kN - 1];
      i = 1;
    }
  }
  mt[0] = 0x80000000u;
  rs.pos_ = kN;
  return rs;
}

void RandomState::generate() {
  // Branch-free form of the reference recurrence so that GCC vectorises the loops:
  // (y & 1) ? kMatrixA : 0  ==  (0 - (y & 1)) & kMatrixA.
  int k = 0;
  for (; k < kN - kM; ++k) {
    const uint32_t y = (state_[k] & kUpper) | (state_[k + 1] & kLower);
    state_[k] = state_[k + kM] ^ (y >> 1) ^ ((0u - (y & 1u)) & kMatrixA);
  }
  for (; k < kN - 1; ++k) {
    const uint32_t y = (state_[k] & kUpper) | (state_[k + 1] & kLower);
    state_[k] = state_[k + (kM - kN)] ^ (y >> 1) ^ ((0u - (y & 1u)) & kMatrixA);
  }
  const uint32_t y = (state_[kN - 1] & kUpper) | (state_[0] & kLower);
  state_[kN - 1] = state_[kM - 1] ^ (y >> 1) ^ ((0u - (y & 1u)) & kMatrixA);
  for (int i = 0; i < kN; ++i) {
    uint32_t t = state_[i];
    t ^= t >> 11;
    t ^= (t << 7) & 0x9d2c5680u;
    t ^= (t << 15) & 0xefc60000u;
    t ^= t >> 18;
    output_[i] = t;
  }
  pos_ = 0;
}

std::vector<int64_t> RandomState::permutation(int64_t n) {
  if (n < 0) throw ToolError("permutation: negative size " + std::to_string(n));
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  shuffle(std::span<int64_t>(out));
  return out;
}

std::vector<int64_t> RandomState::randint(int64_t low, int64_t high, size_t count) {
  if (low >= high)
    throw ToolError("randint: low (" + std::to_string(low) + ") must be below high (" + std::to_string(high) + ")");
  // numpy: rng = (high - 1) - low computed in uint64, then off + masked rejection.
  const uint64_t range = static_cast<uint64_t>(high - 1) - static_cast<uint64_t>(low);
  std::vector<int64_t> out(count);
  for (auto& v : out) v = static_cast<int64_t>(static_cast<uint64_t>(low) + random_interval(range));
  return out;
}

}  // namespace suite::dataset
