// Register fragments shared by the mma.sync (m16n8k16) and wgmma (m64nNk16) attention kernels:
// per warp both use the same 16-row layout. With g = lane/4, t = lane%4, an fp32 accumulator tile
// of 16 rows × 8 columns holds c0,c1 (row g, columns 2t, 2t+1) and c2,c3 (row g+8), and a bf16 A
// operand of 16 rows × 16 k holds a[0] (row g, k 2t..2t+1), a[1] (row g+8), a[2] (row g, k +8),
// a[3] (row g+8, k +8). Device code only. The element type E of the 16-bit operands is bf16
// (the default: the wgmma kernels) or fp16 (__half: the --fp16 path's mma.sync kernels).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace gpt::cuda {

template <class E = __nv_bfloat16>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  if constexpr (std::is_same_v<E, __half>) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

// Two 16-bit elements of type E (one 32-bit register) as fp32.
template <class E = __nv_bfloat16>
__device__ __forceinline__ float2 unpack(uint32_t u) {
  if constexpr (std::is_same_v<E, __half>)
    return __half22float2(*reinterpret_cast<const __half2*>(&u));
  else
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u));
}

// A fragment (16×16) of accumulator tiles c[2kk], c[2kk+1] (16 rows × 16 columns), as E.
template <class E = __nv_bfloat16>
__device__ __forceinline__ void acc_to_a(uint32_t a[4], const float c0[4], const float c1[4]) {
  a[0] = pack<E>(c0[0], c0[1]);
  a[1] = pack<E>(c0[2], c0[3]);
  a[2] = pack<E>(c1[0], c1[1]);
  a[3] = pack<E>(c1[2], c1[3]);
}

// acc plus the dot product of the 8 E pairs in x and y, one fused multiply-add at a time, in
// order (D = rowsum(dO ∘ O) in the attention backward kernels).
template <class E = __nv_bfloat16>
__device__ __forceinline__ float fma_dot8(uint4 x, uint4 y, float acc) {
  const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 a = unpack<E>(xs[j]);
    const float2 b = unpack<E>(ys[j]);
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
  return acc;
}

}  // namespace gpt::cuda
