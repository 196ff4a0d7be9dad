// The template of the per-operation GPU benchmarks that `make bench-gpu` builds (one small
// *_bench.cpp per operation in this folder, each a main() over a list of OpBench). For each
// benchmark: the CPU twin (kernels/ops.h, namespace gpt::cpu) runs once and is the reference;
// the CUDA call runs once on the same inputs and each output is compared with the reference
// (relative tolerance against the output's scale, as tests/gpu/gpu_test_util.h judges); then the
// CUDA call is timed with CUDA events over --reps back-to-back calls after a warm-up.
// Prints one line per benchmark; exits 1 when a CUDA result is off, 2 when no GPU is visible.
//
//   build/bench/layernorm_bench [--batch 4] [--seq 1024] [--hidden 768] [--heads 12]
//                               [--vocab 50304] [--params 124475904] [--reps 20]
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.cuh"
#include "kernels/ops.h"
#include "tests/gpu/device_vectors.h"

namespace opbench {

namespace cpu = gpt::cpu;
namespace cu = gpt::cuda;
using cu::bf16;
using namespace devvec;  // Dev, randn, to_bf16, kBF16, ...

// The shape every benchmark of a run takes (GPT-2 124M sizes at micro-batch 4 by default).
struct Args {
  int B = 4, T = 1024, C = 768, NH = 12, Vp = 50304;
  size_t params = 124475904;  // AdamW: parameters updated per call
  int reps = 20;
};

// One output to validate: the CUDA result (downloaded as fp32) against the CPU twin's.
struct Check {
  std::string what;
  std::function<std::vector<float>()> gpu;
  std::function<std::vector<float>()> cpu;
  double rtol;
};

struct OpBench {
  std::string name;
  double bytes = 0;  // bytes one CUDA call reads and writes at least (for GB/s)
  double flops = 0;  // floating-point operations of one call (for TFLOP/s), 0 when not a product
  std::function<void()> cpu;    // the CPU twin, run once
  std::function<void()> reset;  // before the validated CUDA call (outputs that are added to)
  std::function<void()> gpu;    // one CUDA call, queued on cu::stream()
  std::vector<Check> checks;
};

// Worst |got - ref| / (rtol·|ref| + rtol·max|ref|) over the elements: <= 1 passes; NaN fails.
inline double worst_ratio(const std::vector<float>& got, const std::vector<float>& ref,
                          double rtol) {
  return devvec::relative_errors(got, ref, rtol, rtol).worst;
}

// Milliseconds per call of f over reps back-to-back calls after three warm-up calls.
inline float time_ms(const std::function<void()>& f, int reps) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t a, b;
  GPT_CUDA_CHECK(cudaEventCreate(&a));
  GPT_CUDA_CHECK(cudaEventCreate(&b));
  GPT_CUDA_CHECK(cudaEventRecord(a, cu::stream()));
  for (int i = 0; i < reps; ++i) f();
  GPT_CUDA_CHECK(cudaEventRecord(b, cu::stream()));
  GPT_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  GPT_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / reps;
}

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--help" || f == "-h" || i + 1 >= argc) {
      std::printf(
          "usage: %s [--batch B] [--seq T] [--hidden C] [--heads NH] [--vocab Vp] "
          "[--params N] [--reps R]\n",
          argv[0]);
      std::exit(f == "--help" || f == "-h" ? 0 : 2);
    }
    const long v = std::atol(argv[++i]);
    if (v <= 0) {
      std::fprintf(stderr, "%s: %s must be positive\n", argv[0], f.c_str());
      std::exit(2);
    }
    if (f == "--batch")
      a.B = int(v);
    else if (f == "--seq")
      a.T = int(v);
    else if (f == "--hidden")
      a.C = int(v);
    else if (f == "--heads")
      a.NH = int(v);
    else if (f == "--vocab")
      a.Vp = int(v);
    else if (f == "--params")
      a.params = size_t(v);
    else if (f == "--reps")
      a.reps = int(v);
    else {
      std::fprintf(stderr, "%s: unknown flag %s\n", argv[0], f.c_str());
      std::exit(2);
    }
  }
  if (a.C % a.NH != 0) {
    std::fprintf(stderr, "%s: --hidden must be a multiple of --heads\n", argv[0]);
    std::exit(2);
  }
  return a;
}

// Validates and times every benchmark that make(args) lists; the process's exit status.
inline int run(int argc, char** argv,
               const std::function<std::vector<OpBench>(const Args&)>& make) {
  const Args args = parse_args(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "%s: no CUDA device is visible\n", argv[0]);
    return 2;
  }
  cudaStream_t stream = nullptr;
  GPT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cu::set_stream(stream);
  cudaDeviceProp prop{};
  GPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, B=%d T=%d C=%d NH=%d Vp=%d params=%zu, %d reps\n", prop.name, args.B, args.T,
              args.C, args.NH, args.Vp, args.params, args.reps);
  int bad = 0;
  for (OpBench& b : make(args)) {
    const auto t0 = std::chrono::steady_clock::now();
    b.cpu();
    const double cpu_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (b.reset) b.reset();
    b.gpu();
    std::string verdict = "ok";
    for (const Check& c : b.checks) {
      const double w = worst_ratio(c.gpu(), c.cpu(), c.rtol);
      if (!(w <= 1.0)) {
        verdict = "FAIL (" + c.what + ": " + std::to_string(w) + "x tolerance)";
        ++bad;
        break;
      }
    }
    const float ms = time_ms(b.gpu, args.reps);
    std::printf("%-34s cuda %9.3f ms", b.name.c_str(), ms);
    if (b.bytes > 0) std::printf("  %7.1f GB/s", b.bytes / (ms * 1e-3) / 1e9);
    if (b.flops > 0) std::printf("  %6.1f TFLOP/s", b.flops / (ms * 1e-3) / 1e12);
    std::printf("  cpu twin %9.1f ms  %s\n", cpu_ms, verdict.c_str());
    std::fflush(stdout);
  }
  return bad ? 1 : 0;
}

}  // namespace opbench
