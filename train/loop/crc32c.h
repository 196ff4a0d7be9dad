// CRC-32C (Castagnoli), the checksum of TFRecord framing, and TFRecord's masked form of it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpt {

uint32_t crc32c(const void* data, size_t n);

// TFRecord stores ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a CRC of data holding CRCs
// does not degenerate.
uint32_t masked_crc32c(const void* data, size_t n);

}  // namespace gpt
