// Element types of token files (.bin/.idx) and .npy arrays.
//
// The MMIDIDX code table (Megatron `DType`) and the numpy `descr` strings live here so that the
// indexed dataset and the .npy code agree on one enum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace suite::dataset {

enum class DType : uint8_t { UInt8, Int8, Int16, Int32, Int64, Float64, Float32, UInt16, UInt32, UInt64 };

// Bytes per element.
size_t itemsize(DType t);
// The largest token id an integer type holds, at most 2^32 - 1 (ids are 32-bit in memory).
uint64_t max_token_id(DType t);

// numpy name: "uint16", "int32", ...
std::string_view dtype_name(DType t);

// Inverse of dtype_name; nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// The MMIDIDX dtype code (uint8=1, int8=2, int16=3, int32=4, int64=5, float64=6, float32=7,
// uint16=8); nullopt for types the .idx format cannot hold (uint32, uint64).
std::optional<uint8_t> idx_code(DType t);
std::optional<DType> dtype_from_idx_code(uint8_t code);

// numpy `descr` for little-endian data: "<i4", "<u4", "|u1", "<f8", ...
std::string_view npy_descr(DType t);
std::optional<DType> dtype_from_npy_descr(std::string_view descr);

// Megatron's token dtype rule (preprocess_data.py `optimal_dtype`): uint16 when the tokenizer's
// unpadded vocabulary has fewer than 65500 entries, otherwise int32.
DType token_dtype_for_vocab(uint64_t vocab_size);

// True for the integer types that can hold token ids.
bool is_integer(DType t);

}  // namespace suite::dataset
