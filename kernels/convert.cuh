// fp32 <-> bf16 conversion (round to nearest even), for the --bf16 path's copies of weights and
// matmul inputs; fp32 <-> fp16 for the --fp16 path's; fp32 master weights <-> their two halves
// (kernels/master_split.h).
#pragma once

#include <cstdint>

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

void to_bf16(bf16* out, const float* in, size_t n);
void to_fp32(float* out, const bf16* in, size_t n);
void to_fp16(fp16* out, const float* in, size_t n);  // round to nearest; beyond 65504: inf
void to_fp32(float* out, const fp16* in, size_t n);
void split_master(bf16* hi, uint16_t* lo, const float* in, size_t n);
void join_master(float* out, const bf16* hi, const uint16_t* lo, size_t n);

}  // namespace gpt::cuda
