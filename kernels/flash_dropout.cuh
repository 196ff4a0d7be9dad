// Attention dropout inside the flash kernels (the mma.sync ones of flash_attention_kernels.cuh
// and the wgmma ones of kernels/sm90/): the keep bits of dropout_mask.h's attention_keep, one
// mix64 word per group of four accumulator elements of a thread, kept probabilities scaled by
// rkeep = 1/(1-p). The backward regenerates the bits; nothing is stored. Both kernel families
// hold a 16-row tile's accumulators in the m16n8 layout (rows g and g + 8, columns 2t and 2t + 1
// of each 8-column n-tile), so they share these helpers and drop the same elements.
#pragma once

#include <cstdint>

#include "kernels/dropout_mask.h"

namespace gpt::cuda::flash {

struct Dropout {
  DropKey key;  // read once per kernel (get())
  uint32_t threshold = 0;  // dropout_threshold(p)
  float rkeep = 1.0f;
  // 1 - p: the Hopper backwards scale D by it, which leaves rkeep out of their per-element
  // arithmetic (dQ, dK and dV take it once, as they are stored)
  float keep = 1.0f;
  HeadRange heads;  // the kernel's heads among the model's, whose index the mask hashes
};

// The words of a thread's attention_keep groups in its accumulator tiles acc[NB][4]: the n-tiles
// 2m and 2m+1 (one 16-wide block of columns) hold the groups m; w[m][c] serves the elements with
// e & 1 == c, mix64(input + (o + 16m + c)·stride), o the thread's first column (2t + the tiles'
// origin, a multiple of 16); input (the row's or column's part) and stride split the hash input
// (dropout_mask.h). The base is opaque to the compiler, which would otherwise fold the sums back
// into a 64-bit product per word (the flattened index times the stride).
template <int NB>
__device__ __forceinline__ void group_words(uint64_t w[NB / 2][2], uint64_t input, uint32_t o,
                                            uint64_t stride) {
  uint64_t base = input + uint64_t(o) * stride;
  asm("" : "+l"(base));
#pragma unroll
  for (int m = 0; m < NB / 2; ++m)
#pragma unroll
    for (int c = 0; c < 2; ++c) w[m][c] = mix64(base + uint64_t(16 * m + c) * stride);
}

// The keep bit of element e of n-tile nt under group_words' w: lane 2·bit3(query) + bit3(key),
// where bit 3 of the row is e >> 1 and bit 3 of the column nt & 1; the rows are the queries of S
// (forward, dQ), the keys of Sᵀ (KEY_ROWS: dK/dV).
template <bool KEY_ROWS, int M>
__device__ __forceinline__ bool keep_bit(const Dropout& dr, const uint64_t (&w)[M][2], int nt,
                                         int e) {
  const int lane = KEY_ROWS ? 2 * (nt & 1) + (e >> 1) : 2 * (e >> 1) + (nt & 1);
  return lane_keep(w[nt >> 1][e & 1], lane, dr.threshold);
}

// group_words<NB>'s words for a wgmma kernel to hash while its products run: called after the
// products' commit and before their wait, whose volatile asm statements keep the hash there
// (the compiler would otherwise move it next to the softmax that reads the words), the words
// held in registers across the wait (the 32 keep bits packed instead took 2.5 instructions an
// element more). The wide backward takes it at head size 128; the forwards and the other
// backwards were slower with it (their other warps' softmax fills that wait).
template <int NB>
__device__ __forceinline__ void held_words(uint64_t w[NB / 2][2], uint64_t input, uint32_t o,
                                           uint64_t stride) {
  asm volatile("" : "+l"(input));
  group_words<NB>(w, input, o, stride);
#pragma unroll
  for (int m = 0; m < NB / 2; ++m)
#pragma unroll
    for (int c = 0; c < 2; ++c) asm volatile("" : "+l"(w[m][c]));
}

inline Dropout make_dropout(float p, DropKey key, HeadRange heads) {
  Dropout dr;
  dr.key = key;
  dr.heads = heads;
  dr.threshold = dropout_threshold(p);
  dr.rkeep = 1.0f / (1.0f - p);
  dr.keep = 1.0f - p;
  return dr;
}

}  // namespace gpt::cuda::flash
