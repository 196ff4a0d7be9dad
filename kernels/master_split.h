// An fp32 master weight held as two 16-bit halves, so that the --bf16 compute copy is one of
// them: hi, the weight rounded to bf16 (to nearest, ties to even, as the copy always was), and lo,
// the low 16 bits of the fp32 pattern. The pair costs 4 bytes where an fp32 master beside a bf16
// copy cost 6.
//
// Decoding: the pattern's top half is hi, or hi - 1 where the rounding went up (lo above 0x8000).
// At lo == 0x8000 (a tie) both are possible under ties-to-even, so a value that would round up at
// a tie (top half odd) is stored one fp32 unit further from zero (lo 0x8001): it rounds to the same
// bf16, and the master then differs from the exact AdamW result by 2^-24 of its size, about one
// value in 65,536 per step. Every other value is stored exactly.
//
// Rejected: hi rounded half away from zero (exact masters, but a bf16 copy that differs from
// round-to-nearest-even, which Megatron's and autocast's copies use); an fp32 master with the
// bf16 copy made per layer on the fly (a conversion pass per use).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace gpt {

struct MasterHalves {
  uint16_t hi, lo;
};

// The fp32 bit pattern u as stored: its bf16 rounding (hi, a bf16 bit pattern) and low half lo.
GPT_HOST_DEVICE inline MasterHalves split_master_bits(uint32_t u) {
  if ((u & 0x1FFFFu) == 0x18000u && (u & 0x7F800000u) != 0x7F800000u) ++u;  // see above
  uint32_t hi;
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu) != 0)
    hi = (u >> 16) | 0x40u;  // NaN stays a (quiet) NaN
  else
    hi = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;  // round to nearest, ties to even
  return {uint16_t(hi), uint16_t(u & 0xFFFFu)};
}

// The fp32 bit pattern stored as (hi, lo).
GPT_HOST_DEVICE inline uint32_t join_master_bits(uint16_t hi, uint16_t lo) {
  const uint32_t top = (uint32_t(hi) - (lo > 0x8000u ? 1u : 0u)) & 0xFFFFu;
  return (top << 16) | lo;
}

}  // namespace gpt
