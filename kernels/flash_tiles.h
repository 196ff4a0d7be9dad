// The tile shapes the flash attention kernels (kernels/flash_attention_kernels.cuh) are compiled
// with for head sizes over 64 (80, 96, 128), one table for the launches, gpt-train's --flash-tiles
// and flash-attention-bench's --sweep; and the head sizes that have a flash kernel. Plain C++
// (the memory estimate and the flag parsing read it without CUDA).
#pragma once

#include <iterator>
#include <string>
#include <string_view>

namespace gpt {

inline constexpr int kFlashMaxHeadSize = 128;

// Whether a head size has a flash kernel (the head dimension is padded to 16, 32, 64, 80, 96 or
// 128 inside the kernels; 8-byte copies need a multiple of 4).
constexpr bool flash_head_size_ok(int hs) {
  return hs > 0 && hs % 4 == 0 && hs <= kFlashMaxHeadSize;
}

// Whether a model of hidden size C and NH heads has a flash kernel (given bf16 or fp16): what the
// CUDA backend runs (flash_attention_supported) and the memory estimates plan for.
constexpr bool flash_shape_ok(int C, int NH) {
  return NH > 0 && C % NH == 0 && flash_head_size_ok(C / NH);
}

// One tile shape of the wide-head kernels. Every kernel runs `warps` warps of 16 rows each per
// m-tile: the forward takes `rows` query rows per block (rows / (16 · warps) m-tiles per warp)
// and streams `keys` K/V rows per iteration; the dQ kernel takes 16 · warps query rows per block
// and streams `keys` K/V rows; the dK/dV kernel takes 16 · warps keys per block and streams
// `keys` Q/dO rows per iteration. (Head size 128 in bf16 on compute capability 9.0 takes the
// Hopper kernels of kernels/sm90/ instead unless --sm90-attention is off; those have one shape.)
struct FlashTiles {
  const char* name;  // as --flash-tiles spells it: <rows>x<keys>w<warps>
  int rows, keys, warps;
};

inline constexpr FlashTiles kFlashTiles[] = {
    {"64x64w4", 64, 64, 4},    // one m-tile a warp: the O accumulators of 128 columns fit
    {"128x64w8", 128, 64, 8},  // twice the rows per K/V tile loaded, twice the warps
    {"128x32w4", 128, 32, 4},  // two m-tiles a warp over half the keys (registers for both)
    {"64x128w4", 64, 128, 4},  // half the iterations (shared memory: H100/H200 sizes)
};
inline constexpr int kFlashTileCount = int(std::size(kFlashTiles));
// The default: the fastest forward + backward of flash-attention-bench --sweep at head size 96
// (the 1.7B shape); at 128 (GPT-3 XL) 128x64w8's backward is faster by about 8% and 128x32w4's
// forward by 7%, while 64x64w4 stays within 6% of the best total (one default for every head
// size keeps a single shape compiled into every launch path).
inline constexpr int kFlashDefaultTiles = 0;

// The shape the generic (mma.sync) kernels take for --flash-tiles index v: v itself, or the
// default for an index out of range.
constexpr int flash_generic_tiles(int v) {
  return v >= 0 && v < kFlashTileCount ? v : kFlashDefaultTiles;
}

// The index of a tile shape by name, or -1.
inline int flash_tiles_index(std::string_view name) {
  for (int i = 0; i < kFlashTileCount; ++i)
    if (name == kFlashTiles[i].name) return i;
  return -1;
}

// "64x64w4 | 128x64w8 | ...": the names, for --help and error messages.
inline std::string flash_tiles_names() {
  std::string s;
  for (int i = 0; i < kFlashTileCount; ++i)
    s += (i ? " | " : "") + std::string(kFlashTiles[i].name);
  return s;
}

}  // namespace gpt
