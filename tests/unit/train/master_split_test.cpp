// The split fp32 master weights (kernels/master_split.h): every fp32 pattern comes back from its
// halves, but the ties that round up, which come back one unit further from zero; hi is the
// bf16 rounding to nearest even.
#include "kernels/master_split.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/adamw_spans.h"

namespace {

// The bf16 nearest to x (ties to even), from the two bf16 neighbours in double arithmetic.
uint16_t nearest_bf16(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  const uint32_t down = u & 0xFFFF0000u, up = down + 0x10000u;
  float fd, fu;
  std::memcpy(&fd, &down, 4);
  std::memcpy(&fu, &up, 4);
  const double dd = std::fabs(double(x) - double(fd)), du = std::fabs(double(fu) - double(x));
  if (dd < du || (dd == du && ((down >> 16) & 1u) == 0)) return uint16_t(down >> 16);
  return uint16_t(up >> 16);
}

}  // namespace

TEST_CASE("split masters: every low half under a spread of top halves") {
  // Signs, exponents from subnormal to the largest finite, both parities of the top half.
  // (0x7F7F would round its upper half to infinity, which nearest_bf16 does not model.)
  const uint32_t tops[] = {0x0000, 0x0001, 0x0080, 0x3F80, 0x3F81, 0x3FFF, 0x4000,
                           0x7F7E, 0x8000, 0x8001, 0xBF80, 0xBF81, 0xC2A5};
  size_t nudged = 0, odd = 0, wrong_hi = 0, wrong_back = 0;
  for (uint32_t top : tops) odd += top & 1u;
  for (uint32_t top : tops)
    for (uint32_t low = 0; low <= 0xFFFF; ++low) {
      const uint32_t u = (top << 16) | low;
      const gpt::MasterHalves h = gpt::split_master_bits(u);
      const bool ties_up = low == 0x8000 && (top & 1u);
      wrong_hi += h.hi != nearest_bf16(u);
      const uint32_t back = gpt::join_master_bits(h.hi, h.lo);
      if (ties_up && back == u + 1)  // one unit further from zero, the same bf16
        ++nudged;
      else
        wrong_back += back != u;
    }
  CHECK(wrong_hi == 0);
  CHECK(wrong_back == 0);
  CHECK(nudged == odd);
}

TEST_CASE("split masters: rounding up into the next binade and to infinity comes back") {
  for (uint32_t u : {0x3F7FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x007FFFFFu, 0x7F800000u}) {
    const gpt::MasterHalves h = gpt::split_master_bits(u);
    CHECK(gpt::join_master_bits(h.hi, h.lo) == u);
  }
  // A NaN stays a NaN, as both halves hold it.
  const gpt::MasterHalves n = gpt::split_master_bits(0x7F800001u);
  const uint32_t back = gpt::join_master_bits(n.hi, n.lo);
  float f;
  std::memcpy(&f, &back, 4);
  CHECK(std::isnan(f));
}

TEST_CASE("split masters: the AdamW spans of split tensors find their packed low halves") {
  // Tensors [0, 10), [10, 200000) (split), [200000, 200003), [200003, 270000) (split).
  const std::vector<std::pair<size_t, size_t>> split_tensors = {{10, 200000}, {200003, 270000}};
  const std::vector<long long> shifts = gpt::cuda::packed_lo_shifts(split_tensors);
  CHECK(shifts == std::vector<long long>{-10, 199990 - 200003});
  const auto spans = gpt::cuda::with_split_master(
      gpt::cuda::adamw_spans({{0, 10}, {10, 200000}, {200000, 200003}, {200003, 270000}},
                             {false, true, false, true}),
      split_tensors, shifts);
  size_t split = 0;
  for (const auto& sp : spans) {
    if (!sp.split_master) continue;
    ++split;
    // Element i's low half at i + lo_shift: the first tensor's from 0, the second's after it.
    CHECK(sp.lo_shift == (sp.begin < 200000 ? -10 : 199990 - 200003));
  }
  CHECK(split == 6);  // 4 spans of the first (65536 each at most), 2 of the second
  CHECK_FALSE(spans.front().split_master);
}
