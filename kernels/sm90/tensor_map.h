// Tensor maps (the descriptors of Hopper's bulk tensor copies, TMA) for bf16 row-major tensors
// in 64-column boxes with the 128-byte swizzle: the layout of the swizzled tiles that the wgmma
// kernels read (gemm_sm90.cu, the flash attention backward at head sizes 96 and 128). Host code;
// cuTensorMapEncodeTiled comes from the driver through the runtime (no -lcuda at link time).
#pragma once

#include <cuda.h>

#include "kernels/cuda_common.cuh"

namespace gpt::cuda::sm90 {

// Whether the driver offers cuTensorMapEncodeTiled (sm90_available asks).
bool tensor_maps_available();

// A [rows, cols] matrix in boxes of box_rows × 64.
CUtensorMap tensor_map(const bf16* ptr, int rows, int cols, int box_rows);

// batches × [rows, cols] matrices one after the other, in boxes of box_rows × 64 of one matrix:
// rows past a matrix's last read as zeros, not as the next matrix's first.
CUtensorMap tensor_map_batched(const bf16* ptr, int batches, int rows, int cols, int box_rows);

}  // namespace gpt::cuda::sm90
