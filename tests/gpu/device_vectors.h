// What the GPU tests (gpu_test_util.h) and the per-operation benchmarks
// (scripts/bench/gpu/op_bench.h) share: a device copy of a host vector, seeded random inputs,
// bf16 and fp16 rounding on the host, and the relative error both judge a CUDA result by against
// its CPU twin.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_common.cuh"
#include "tests/random_inputs.h"

namespace devvec {

using gpt::cuda::bf16;
using gpt::cuda::fp16;

// A device copy of a host vector (or n elements with every bit set: NaN for floats, so that an
// element a kernel forgot to write fails the comparison). download() waits for the kernels'
// stream.
template <class T>
class Dev {
 public:
  explicit Dev(size_t n) : n_(n) {
    GPT_CUDA_CHECK(cudaMalloc(&p_, (n ? n : 1) * sizeof(T)));
    poison();
  }
  explicit Dev(const std::vector<T>& h) : Dev(h.size()) { upload(h); }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  void upload(const std::vector<T>& h) {
    if (h.size() != n_)
      throw std::length_error("Dev::upload: " + std::to_string(h.size()) +
                              " elements into a buffer of " + std::to_string(n_));
    GPT_CUDA_CHECK(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    GPT_CUDA_CHECK(cudaStreamSynchronize(gpt::cuda::stream()));
    GPT_CUDA_CHECK(cudaGetLastError());
    std::vector<T> h(n_);
    GPT_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  void poison() { GPT_CUDA_CHECK(cudaMemset(p_, 0xff, (n_ ? n_ : 1) * sizeof(T))); }
  T* get() const { return p_; }
  operator T*() const { return p_; }

 private:
  T* p_ = nullptr;
  size_t n_;
};

using random_inputs::randint;
using random_inputs::randn;

// Host bf16 and fp16 rounding (round to nearest even) and back, for the half-precision kernels'
// inputs and outputs.
template <class To, class From>
std::vector<To> cast_all(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}
inline std::vector<bf16> to_bf16(const std::vector<float>& v) { return cast_all<bf16>(v); }
inline std::vector<fp16> to_fp16(const std::vector<float>& v) { return cast_all<fp16>(v); }
inline std::vector<float> to_float(const std::vector<bf16>& v) { return cast_all<float>(v); }
inline std::vector<float> to_float(const std::vector<fp16>& v) { return cast_all<float>(v); }
// The values a bf16 kernel sees, for the CPU twin fed the same rounded inputs (bf16-exact values
// are fp16-exact at unit scale, so the fp16 kernels take the same).
inline std::vector<float> rounded(const std::vector<float>& v) { return to_float(to_bf16(v)); }

constexpr double kF32 = 1e-5;   // fp32 kernels against the fp32 CPU twin
constexpr double kBF16 = 2e-2;  // bf16 operands or outputs against the fp32 CPU twin

// The error of got against ref, element by element, as a multiple of the tolerance
// rtol·|ref| + atol_frac·max|ref|: atol scales with the tensor so that elements that cancel to
// about 0 are judged on the tensor's scale. A ratio of 1 is at tolerance; NaN is never within it.
struct RelativeErrors {
  double worst = 0;     // the largest ratio (infinite for a non-finite element)
  size_t worst_i = 0;   // where it is
  size_t over = 0;      // how many elements are past tolerance
};
inline RelativeErrors relative_errors(const std::vector<float>& got,
                                      const std::vector<float>& ref, double rtol,
                                      double atol_frac) {
  RelativeErrors e;
  if (got.size() != ref.size()) {
    e.worst = INFINITY;
    e.over = ref.size();
    return e;
  }
  double maxref = 0;
  for (float r : ref) maxref = std::fmax(maxref, std::fabs(double(r)));
  const double atol = atol_frac * maxref + 1e-30;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(ref[i]));
    const double ratio =
        std::isfinite(got[i]) ? err / (atol + rtol * std::fabs(double(ref[i]))) : INFINITY;
    if (!(ratio <= 1.0)) ++e.over;
    if (!(ratio <= e.worst)) {
      e.worst = ratio;
      e.worst_i = i;
    }
  }
  return e;
}

}  // namespace devvec
