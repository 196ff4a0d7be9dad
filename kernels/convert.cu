#include "kernels/convert.cuh"

#include "kernels/master_split.h"

namespace gpt::cuda {
namespace {

// One element each (for_each_index). bf16 and fp16 from float round to nearest even; to float
// they are exact.
template <class Out, class In>
struct Cast {
  Out* out;
  const In* in;
  __device__ void operator()(size_t i) const { out[i] = static_cast<Out>(in[i]); }
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

void to_bf16(bf16* out, const float* in, size_t n) { for_each_index(n, Cast<bf16, float>{out, in}); }

void to_fp16(fp16* out, const float* in, size_t n) { for_each_index(n, Cast<fp16, float>{out, in}); }

void to_fp32(float* out, const bf16* in, size_t n) { for_each_index(n, Cast<float, bf16>{out, in}); }

void to_fp32(float* out, const fp16* in, size_t n) { for_each_index(n, Cast<float, fp16>{out, in}); }

void split_master(bf16* hi, uint16_t* lo, const float* in, size_t n) {
  for_each_index(n, SplitMaster{hi, lo, in});
}

void join_master(float* out, const bf16* hi, const uint16_t* lo, size_t n) {
  for_each_index(n, JoinMaster{out, hi, lo});
}

}  // namespace gpt::cuda
