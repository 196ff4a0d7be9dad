// Byte layout of a Megatron MMIDIDX `.idx` file (version 1), shared by reader and writer:
//
//   0   9 bytes   magic "MMIDIDX\0\0"
//   9   u64       version (1)
//   17  u8        dtype code (see dtype.h)
//   18  u64       S  = sequence count
//   26  u64       D1 = document index entries (documents + 1)
//   34  i32[S]    sequence lengths (tokens)
//       i64[S]    sequence pointers (byte offsets into .bin)
//       i64[D1]   document index
//       i8[S]     optional per-sequence modes (multimodal datasets only)
//
// Little-endian, no alignment or padding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace suite::dataset {

inline constexpr std::string_view kIdxMagic{"MMIDIDX\0\0", 9};
inline constexpr uint64_t kIdxVersion = 1;
inline constexpr uint64_t kIdxHeaderSize = 34;

inline std::string idx_path(std::string_view prefix) { return std::string(prefix) + ".idx"; }
inline std::string bin_path(std::string_view prefix) { return std::string(prefix) + ".bin"; }

}  // namespace suite::dataset
