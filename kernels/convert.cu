#include "kernels/convert.cuh"

#include "kernels/master_split.h"

namespace gpt::cuda {
namespace {

// One element each (for_each_index).
struct ToBf16 {
  bf16* out;
  const float* in;
  __device__ void operator()(size_t i) const { out[i] = __float2bfloat16_rn(in[i]); }
};
struct ToFp16 {
  fp16* out;
  const float* in;
  __device__ void operator()(size_t i) const { out[i] = __float2half_rn(in[i]); }
};
struct Bf16ToFp32 {
  float* out;
  const bf16* in;
  __device__ void operator()(size_t i) const { out[i] = __bfloat162float(in[i]); }
};
struct Fp16ToFp32 {
  float* out;
  const fp16* in;
  __device__ void operator()(size_t i) const { out[i] = __half2float(in[i]); }
};
struct SplitMaster {
  bf16* hi;
  uint16_t* lo;
  const float* in;
  __device__ void operator()(size_t i) const {
    const MasterHalves h = split_master_bits(__float_as_uint(in[i]));
    hi[i] = __ushort_as_bfloat16(h.hi);
    lo[i] = h.lo;
  }
};
struct JoinMaster {
  float* out;
  const bf16* hi;
  const uint16_t* lo;
  __device__ void operator()(size_t i) const {
    out[i] = __uint_as_float(join_master_bits(__bfloat16_as_ushort(hi[i]), lo[i]));
  }
};

}  // namespace

void to_bf16(bf16* out, const float* in, size_t n) { for_each_index(n, ToBf16{out, in}); }

void to_fp16(fp16* out, const float* in, size_t n) { for_each_index(n, ToFp16{out, in}); }

void to_fp32(float* out, const bf16* in, size_t n) { for_each_index(n, Bf16ToFp32{out, in}); }

void to_fp32(float* out, const fp16* in, size_t n) { for_each_index(n, Fp16ToFp32{out, in}); }

void split_master(bf16* hi, uint16_t* lo, const float* in, size_t n) {
  for_each_index(n, SplitMaster{hi, lo, in});
}

void join_master(float* out, const bf16* hi, const uint16_t* lo, size_t n) {
  for_each_index(n, JoinMaster{out, hi, lo});
}

}  // namespace gpt::cuda
