// Helpers of the GPU tests: device buffers, random inputs, robust comparisons.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.cuh"

namespace gputest {

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

// Device copy of a host vector; download() waits for the kernels' stream.
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
    REQUIRE(h.size() == n_);
    GPT_CUDA_CHECK(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    GPT_CUDA_CHECK(cudaStreamSynchronize(gpt::cuda::stream()));
    GPT_CUDA_CHECK(cudaGetLastError());
    std::vector<T> h(n_);
    GPT_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  // All bits set: NaN for floats, so an element the kernel forgot to write fails the comparison.
  void poison() { GPT_CUDA_CHECK(cudaMemset(p_, 0xff, (n_ ? n_ : 1) * sizeof(T))); }
  T* get() const { return p_; }
  operator T*() const { return p_; }

 private:
  T* p_ = nullptr;
  size_t n_;
};

inline std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Host bf16 rounding (round to nearest even) and back, for the bf16 kernels' inputs and outputs.
inline std::vector<gpt::cuda::bf16> to_bf16(const std::vector<float>& v) {
  std::vector<gpt::cuda::bf16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = __float2bfloat16_rn(v[i]);
  return h;
}
inline std::vector<float> to_float(const std::vector<gpt::cuda::bf16>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = __bfloat162float(v[i]);
  return f;
}

// The same for fp16 (the --fp16 kernels).
inline std::vector<gpt::cuda::fp16> to_fp16(const std::vector<float>& v) {
  std::vector<gpt::cuda::fp16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
  return h;
}
inline std::vector<float> to_float(const std::vector<gpt::cuda::fp16>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = __half2float(v[i]);
  return f;
}

// The calling thread's flash attention tile shape for head sizes over 64 (kernel_config.h).
inline void set_flash_tiles(int index) {
  gpt::KernelConfig k = gpt::cuda::kernel_config();
  k.flash_tiles = index;
  gpt::cuda::set_kernel_config(k);
}

inline std::vector<int> randint(size_t n, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, hi - 1);
  std::vector<int> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// |got - ref| <= rtol·|ref| + atol_frac·max|ref| for every element; NaN never passes.
// atol scales with the tensor so that elements that cancel to ~0 are judged on the tensor's
// scale. Logs the worst element and the worst error ratio (1.0 = at tolerance).
inline bool close(const std::string& what, const std::vector<float>& got,
                  const std::vector<float>& ref, double rtol, double atol_frac = -1) {
  if (atol_frac < 0) atol_frac = rtol;
  REQUIRE(got.size() == ref.size());
  double maxref = 0;
  for (float r : ref) maxref = std::fmax(maxref, std::fabs(double(r)));
  const double atol = atol_frac * maxref + 1e-30;
  double worst = 0;
  size_t worst_i = 0, bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(ref[i]));
    const double ratio = std::isfinite(got[i]) ? err / (atol + rtol * std::fabs(double(ref[i])))
                                               : INFINITY;
    if (!(ratio <= 1.0)) ++bad;
    if (!(ratio <= worst)) {
      worst = ratio;
      worst_i = i;
    }
  }
  MESSAGE(what << ": n=" << ref.size() << " worst ratio " << worst << " at " << worst_i << " (got "
                << (got.empty() ? 0 : got[worst_i]) << ", ref " << (ref.empty() ? 0 : ref[worst_i])
                << "), " << bad << " over tolerance");
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " elements over tolerance (rtol " << rtol << ")");
  return bad == 0;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// An attention-style shape: batch, sequence, channels, heads.
struct Shape {
  int B, T, C, NH;
};

constexpr double kF32 = 1e-5;   // fp32 kernels vs the fp32 CPU reference
constexpr double kBF16 = 2e-2;  // bf16 operands vs the fp32 CPU reference

}  // namespace gputest
