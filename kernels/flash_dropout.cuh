// Attention dropout inside the flash kernels (the mma.sync ones of flash_attention_kernels.cuh
// and the wgmma ones of kernels/sm90/): the keep bits of dropout_mask.h's attention_keep, one
// word per group of four accumulator elements of a thread, kept probabilities scaled by
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
// e & 1 == c, line.word(o + 16m + c), o the thread's first column: 2t + the tiles' origin, a
// multiple of 8·NB (for the columns of Sᵀ read rows), so that o + 16m + c is o ^ (16m + c). The
// hashes' first xorshift then splits into the tile's part and a constant per word.
template <int NB, int SHIFT>
__device__ __forceinline__ void group_words(uint64_t w[NB / 2][2], const AttentionLine<SHIFT>& line,
                                            uint32_t o) {
  const uint32_t ta = line.a ^ o << SHIFT, tb = line.b ^ o << SHIFT;
  const uint32_t pa = ta ^ ta >> 16, pb = tb ^ tb >> 16;
#pragma unroll
  for (int m = 0; m < NB / 2; ++m)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const uint32_t d = uint32_t(16 * m + c) << SHIFT, e = d ^ d >> 16;
      w[m][c] = uint64_t(hash32_rest(pa ^ e)) << 32 | hash32_rest(pb ^ e);
    }
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
template <int NB, int SHIFT>
__device__ __forceinline__ void held_words(uint64_t w[NB / 2][2], const AttentionLine<SHIFT>& line,
                                           uint32_t o) {
  asm volatile("" : "+r"(o));
  group_words<NB>(w, line, o);
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
