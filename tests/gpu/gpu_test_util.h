// Helpers of the GPU tests: device buffers, random inputs and robust comparisons (the part the
// per-operation benchmarks share is device_vectors.h), kernel choices.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.cuh"
#include "tests/gpu/device_vectors.h"

namespace gputest {

using namespace devvec;

// The calling thread's kernel choices with one of them changed (kernel_config.h).
inline void set_sm90_gemm(gpt::Sm90GemmUse use) {
  gpt::KernelConfig k = gpt::cuda::kernel_config();
  k.sm90_gemm = use;
  gpt::cuda::set_kernel_config(k);
}
inline void set_sm90_attention(bool on) {
  gpt::KernelConfig k = gpt::cuda::kernel_config();
  k.sm90_attention = on;
  gpt::cuda::set_kernel_config(k);
}

// The calling thread's flash attention tile shape for head sizes over 64 (kernel_config.h).
inline void set_flash_tiles(int index) {
  gpt::KernelConfig k = gpt::cuda::kernel_config();
  k.flash_tiles = index;
  gpt::cuda::set_kernel_config(k);
}

// |got - ref| <= rtol·|ref| + atol_frac·max|ref| for every element; NaN never passes.
// atol scales with the tensor so that elements that cancel to ~0 are judged on the tensor's
// scale. Logs the worst element and the worst error ratio (1.0 = at tolerance).
inline bool close(const std::string& what, const std::vector<float>& got,
                  const std::vector<float>& ref, double rtol, double atol_frac = -1) {
  REQUIRE(got.size() == ref.size());
  const devvec::RelativeErrors e =
      devvec::relative_errors(got, ref, rtol, atol_frac < 0 ? rtol : atol_frac);
  MESSAGE(what << ": n=" << ref.size() << " worst ratio " << e.worst << " at " << e.worst_i
               << " (got " << (got.empty() ? 0 : got[e.worst_i]) << ", ref "
               << (ref.empty() ? 0 : ref[e.worst_i]) << "), " << e.over << " over tolerance");
  CHECK_MESSAGE(e.over == 0,
                what << ": " << e.over << " elements over tolerance (rtol " << rtol << ")");
  return e.over == 0;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// An attention-style shape: batch, sequence, channels, heads.
struct Shape {
  int B, T, C, NH;
};

}  // namespace gputest
