// Times the forward and input-gradient matrix products of a gpt-train --bf16 step on the Hopper GEMM of
// kernels/sm90/gemm_sm90.cu against the cuBLASLt path (autotuned, as in training) in the same run,
// through the functions training calls (matmul_forward_bf16_out / _gelu,
// matmul_backward_bf16_dinp, and _dinp_gelu: the fc2 input gradient with the GELU backward and
// the fc bias gradient, fused on Hopper, against cuBLASLt + gelu_backward_bf16_bias), and
// compares their outputs (largest difference relative to the output's scale; the two sum in
// different orders) and the Hopper kernel's bits run to run, with a hash of them (to tell whether
// two builds give the same bits). Build and run (repository root,
// after `make`, on a machine with an H100):
//   nvcc -O3 -std=c++20 -I. -gencode=arch=compute_90a,code=sm_90a scripts/bench/gemm_sm90_bench.cu
//     build/libtrain.a -lcublasLt -lcublas -o build/gemm-sm90-bench      (one command line)
//   build/gemm-sm90-bench [reps] [shape]  (default 20 repetitions; shape: only the shapes whose
//                                          name contains it, e.g. for ncu)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/matmul.cuh"
#include "kernels/sm90/gemm_sm90.cuh"

using namespace gpt::cuda;

namespace {

// Which products go to the Hopper GEMM from now on (this thread's KernelConfig).
void use_sm90(gpt::Sm90GemmUse use) {
  gpt::KernelConfig k = kernel_config();
  k.sm90_gemm = use;
  set_kernel_config(k);
}

// kDinpGeluKept: kDinpGelu where the layer kept its forward's GELU output (none written).
enum Kind { kOut, kGelu, kDinp, kDinpGelu, kDinpGeluKept };
struct Shape {
  const char* name;
  int M, K, N;
  Kind kind;
};

template <class T>
T* device_random(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<T> h(n);
  for (auto& x : h) x = T(d(rng));
  T* p = nullptr;
  GPT_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
  GPT_CUDA_CHECK(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

// FNV-1a over the bytes of v: whether two builds give the same bits.
uint64_t fnv1a(const std::vector<float>& v) {
  uint64_t h = 14695981039346656037ull;
  const auto* b = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

std::vector<float> download(const bf16* p, size_t n) {
  std::vector<bf16> h(n);
  GPT_CUDA_CHECK(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = __bfloat162float(h[i]);
  return out;
}

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0, worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, double(std::fabs(b[i])));
    const double d = std::fabs(double(a[i]) - b[i]);
    worst = std::isfinite(d) ? std::max(worst, d) : INFINITY;
  }
  return worst / scale;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const Shape shapes[] = {
      {"124M qkv", 16384, 768, 2304, kOut},
      {"124M fc+gelu", 16384, 768, 3072, kGelu}, {"124M fc2", 16384, 3072, 768, kOut},
      {"350M qkv", 16384, 1024, 3072, kOut},
      {"350M fc+gelu", 16384, 1024, 4096, kGelu}, {"350M fc2", 16384, 4096, 1024, kOut},
      // input gradients: dout [M, K] · weight [K, N]
      {"124M dqkv·W", 16384, 2304, 768, kDinp},  {"124M dproj·W", 16384, 768, 768, kDinp},
      {"124M dfc·W", 16384, 3072, 768, kDinp},   {"124M dfc2·W", 16384, 768, 3072, kDinp},
      {"350M dqkv·W", 16384, 3072, 1024, kDinp}, {"350M dproj·W", 16384, 1024, 1024, kDinp},
      {"350M dfc·W", 16384, 4096, 1024, kDinp},  {"350M dfc2·W", 16384, 1024, 4096, kDinp},
      // the same with the GELU backward (and the fc bias gradient) fused
      {"124M dfc2·W+dG", 16384, 768, 3072, kDinpGelu},
      {"350M dfc2·W+dG", 16384, 1024, 4096, kDinpGelu},
      {"124M dfc2·W+dG kept", 16384, 768, 3072, kDinpGeluKept},
      {"350M dfc2·W+dG kept", 16384, 1024, 4096, kDinpGeluKept},
      // the rows past GPT-2 (train_rows.sh): 1.3B at micro-batch 4 and sequence 2048, 1.7B at 4
      // and 1024
      {"1.3B fc+gelu", 8192, 2048, 8192, kGelu}, {"1.3B dfc2·W+dG", 8192, 2048, 8192, kDinpGelu},
      {"1.3B dfc2·W+dG kept", 8192, 2048, 8192, kDinpGeluKept},
      {"1.7B fc+gelu", 4096, 2304, 9216, kGelu}, {"1.7B dfc2·W+dG", 4096, 2304, 9216, kDinpGelu},
      {"1.7B dfc2·W+dG kept", 4096, 2304, 9216, kDinpGeluKept},
      // the same products without the GELU: what its epilogue costs
      {"1.3B fc", 8192, 2048, 8192, kOut}, {"1.3B dfc2·W", 8192, 2048, 8192, kDinp},
  };
  std::printf("%-20s %9s %9s %8s %8s %7s %10s %s\n", "shape", "cuBLAS us", "sm90 us", "TF/s cu",
              "TF/s 90", "ratio", "rel diff", "bits run to run, their hash");
  for (const Shape& s : shapes) {
    if (argc > 2 && !std::strstr(s.name, argv[2])) continue;
    const size_t mn = size_t(s.M) * s.N;
    bf16* a = device_random<bf16>(size_t(s.M) * s.K, 1, 1.f);
    bf16* w = device_random<bf16>(size_t(s.N) * s.K, 2, 0.03f);
    bf16* bias_h = device_random<bf16>(s.N, 3, 0.5f);
    bf16* out = nullptr;
    bf16* pre = nullptr;
    GPT_CUDA_CHECK(cudaMalloc(&out, mn * 2));
    GPT_CUDA_CHECK(cudaMalloc(&pre, mn * 2));
    const bool dgelu = s.kind == kDinpGelu || s.kind == kDinpGeluKept;
    bf16* gelu_in = dgelu ? device_random<bf16>(mn, 4, 1.f) : nullptr;
    float* dbias = nullptr;
    GPT_CUDA_CHECK(cudaMalloc(&dbias, s.N * sizeof(float)));
    auto run = [&] {
      switch (s.kind) {
        case kOut: matmul_forward_bf16_out(out, a, w, bias_h, s.M, s.K, s.N); break;
        case kGelu:
          matmul_forward_bf16_gelu(out, pre, a, w, bias_h, s.M, s.K, s.N);
          break;
        case kDinp:
          matmul_backward_bf16_dinp(nullptr, out, a, w, s.M, s.N, s.K);
          break;
        case kDinpGelu:
        case kDinpGeluKept:
          matmul_backward_bf16_dinp_gelu(out, s.kind == kDinpGelu ? pre : nullptr, dbias, a, w,
                                         gelu_in, s.M, s.N, s.K);
          break;
      }
    };
    auto result = [&] {
      GPT_CUDA_CHECK(cudaDeviceSynchronize());
      auto r = download(out, mn);
      if (s.kind == kGelu || s.kind == kDinpGelu) {
        auto p = download(pre, mn);
        r.insert(r.end(), p.begin(), p.end());
      }
      if (dgelu) {  // the bias gradient of one run (reset before each result)
        std::vector<float> b(s.N);
        GPT_CUDA_CHECK(cudaMemcpy(b.data(), dbias, s.N * 4, cudaMemcpyDeviceToHost));
        r.insert(r.end(), b.begin(), b.end());
        GPT_CUDA_CHECK(cudaMemset(dbias, 0, s.N * 4));
      }
      return r;
    };
    GPT_CUDA_CHECK(cudaMemset(dbias, 0, s.N * 4));
    use_sm90(gpt::Sm90GemmUse::kNone);
    run();  // autotunes the cuBLASLt plan
    const auto ref = result();
    use_sm90(gpt::Sm90GemmUse::kAll);
    if (!gemm_sm90_applies(s.M, s.N, s.K)) {
      std::printf("%-20s the sm90 GEMM does not apply here\n", s.name);
      continue;
    }
    run();
    const auto got = result();
    GPT_CUDA_CHECK(cudaMemset(out, 0, mn * 2));
    run();
    const auto again = result();
    const bool same = std::memcmp(got.data(), again.data(), got.size() * 4) == 0;

    cudaEvent_t e0, e1;
    GPT_CUDA_CHECK(cudaEventCreate(&e0));
    GPT_CUDA_CHECK(cudaEventCreate(&e1));
    std::vector<float> t_cu, t_90;
    for (int r = 0; r < reps; ++r)
      for (int sm90 = 0; sm90 < 2; ++sm90) {
        use_sm90(sm90 ? gpt::Sm90GemmUse::kAll : gpt::Sm90GemmUse::kNone);
        GPT_CUDA_CHECK(cudaEventRecord(e0, stream()));
        for (int i = 0; i < 5; ++i) run();
        GPT_CUDA_CHECK(cudaEventRecord(e1, stream()));
        GPT_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        GPT_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        (sm90 ? t_90 : t_cu).push_back(ms * 1000 / 5);
      }
    std::sort(t_cu.begin(), t_cu.end());
    std::sort(t_90.begin(), t_90.end());
    const double cu = t_cu[reps / 2], s90 = t_90[reps / 2];
    const double flop = 2.0 * s.M * s.N * s.K;
    std::printf("%-20s %9.1f %9.1f %8.0f %8.0f %7.3f %10.2e %s %016llx\n", s.name, cu, s90,
                flop / cu * 1e-6, flop / s90 * 1e-6, cu / s90, rel_diff(got, ref),
                same ? "same" : "DIFFER", (unsigned long long)fnv1a(got));
    cudaFree(a), cudaFree(w), cudaFree(bias_h);
    cudaFree(out), cudaFree(pre), cudaFree(gelu_in), cudaFree(dbias);
  }
  return 0;
}
