// Register fragments shared by the mma.sync (m16n8k16) and wgmma (m64nNk16) attention kernels:
// per warp both use the same 16-row layout. With g = lane/4, t = lane%4, an fp32 accumulator tile
// of 16 rows × 8 columns holds c0,c1 (row g, columns 2t, 2t+1) and c2,c3 (row g+8), and a bf16 A
// operand of 16 rows × 16 k holds a[0] (row g, k 2t..2t+1), a[1] (row g+8), a[2] (row g, k +8),
// a[3] (row g+8, k +8). Device code only.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace gpt::cuda {

__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// A fragment (16×16) of accumulator tiles c[2kk], c[2kk+1] (16 rows × 16 columns), as bf16.
__device__ __forceinline__ void acc_to_a(uint32_t a[4], const float c0[4], const float c1[4]) {
  a[0] = pack(c0[0], c0[1]);
  a[1] = pack(c0[2], c0[3]);
  a[2] = pack(c1[0], c1[1]);
  a[3] = pack(c1[2], c1[3]);
}

// acc plus the dot product of the 8 bf16 pairs in x and y, one fused multiply-add at a time, in
// order (D = rowsum(dO ∘ O) in the attention backward kernels).
__device__ __forceinline__ float fma_dot8(uint4 x, uint4 y, float acc) {
  const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&xs[j]));
    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&ys[j]));
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
  return acc;
}

}  // namespace gpt::cuda
