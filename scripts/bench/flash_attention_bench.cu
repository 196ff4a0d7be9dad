// Times the flash attention kernels (kernels/flash_attention.cu, and on an sm_90 device the wgmma
// kernels of kernels/sm90/flash_attention_sm90.cu, both in the same run) with CUDA events and
// checks that forward and backward are bit-identical run to run. Includes the .cu files to time the
// kernels alone with the tile configurations below, which a sweep overrides when compiling
// (-DGPT_FLASH_FWD_CFG=2,4,2 ...; default: the configurations in use). Also times the backward with
// the qkv bias gradient: summed inside the kernels (dbias argument) against bias_grad after them.
// Build and run (from the repository root, on a machine with a GPU):
//   nvcc -O3 -std=c++20 -I. -gencode=arch=compute_90a,code=sm_90a -DGPT_HAVE_CUDA
//     --expt-relaxed-constexpr scripts/bench/flash_attention_bench.cu kernels/cuda_common.cu
//     kernels/matmul.cu kernels/lt_gemm.cu kernels/convert.cu kernels/gelu.cu kernels/column_sum.cu
//     kernels/sm90/gemm_sm90.cu kernels/sm90/capability.cu
//     -lcublasLt -lcublas -o build/flash-attention-bench          (one command line)
//   build/flash-attention-bench [B T C NH reps]      (default 16 1024 768 12 20)
// FLOPs counted as causal: forward 2·2·B·NH·T²·hs/2, backward 2.5× that.
#include "kernels/flash_attention.cu"
#include "kernels/sm90/flash_attention_sm90.cu"

// The configurations timed. Generic kernels: forward MT, NW, MINB; dQ NW, KC, MINB; dK/dV NW, QC,
// MINB (kernels/flash_attention.cu). wgmma kernels: forward warpgroups, MINB; fused backward
// MINB; its interleaved tail heads and their share of the resident blocks in quarters.
#ifndef GPT_FLASH_FWD_CFG
#define GPT_FLASH_FWD_CFG kFwdTiles, kFwdWarps, kFwdMinBlocks
#endif
#ifndef GPT_FLASH_DQ_CFG
#define GPT_FLASH_DQ_CFG kDqWarps, kDqKeyChunk, kDqMinBlocks
#endif
#ifndef GPT_FLASH_KV_CFG
#define GPT_FLASH_KV_CFG kKvWarps, kKvQueryChunk, kKvMinBlocks
#endif
#ifndef GPT_FLASH90_FWD_CFG
#define GPT_FLASH90_FWD_CFG sm90::kForwardWarpgroups, sm90::kForwardMinBlocks
#endif
#ifndef GPT_FLASH90_FUSED_MINB
#define GPT_FLASH90_FUSED_MINB sm90::kFusedMinBlocks
#endif
#ifndef GPT_FLASH90_BWD_TAIL_HEADS
#define GPT_FLASH90_BWD_TAIL_HEADS sm90::kBackwardTailHeads
#endif
#ifndef GPT_FLASH90_BWD_SLOT_QUARTERS
#define GPT_FLASH90_BWD_SLOT_QUARTERS sm90::kBackwardSlotQuarters
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace gpt::cuda;

namespace {

template <class T>
struct Buf {
  T* p = nullptr;
  size_t n;
  explicit Buf(size_t n_) : n(n_) { GPT_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T))); }
  ~Buf() { cudaFree(p); }
  std::vector<T> get() const {
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream()));
    std::vector<T> h(n);
    GPT_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  operator T*() const { return p; }
};

template <class F>
float time_ms(F f, int reps) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t a, b;
  GPT_CUDA_CHECK(cudaEventCreate(&a));
  GPT_CUDA_CHECK(cudaEventCreate(&b));
  GPT_CUDA_CHECK(cudaEventRecord(a, stream()));
  for (int i = 0; i < reps; ++i) f();
  GPT_CUDA_CHECK(cudaEventRecord(b, stream()));
  GPT_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  GPT_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / reps;
}

template <class T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int B = argc > 1 ? std::atoi(argv[1]) : 16, T = argc > 2 ? std::atoi(argv[2]) : 1024;
  const int C = argc > 3 ? std::atoi(argv[3]) : 768, NH = argc > 4 ? std::atoi(argv[4]) : 12;
  const int reps = argc > 5 ? std::atoi(argv[5]) : 20;
  if (!flash_attention_supported(C, NH)) {
    std::fprintf(stderr, "unsupported head size %d\n", C / NH);
    return 2;
  }
  const int hs = C / NH;
  const size_t nqkv = size_t(B) * T * 3 * C, nout = size_t(B) * T * C, nl = size_t(B) * NH * T;
  const double fwd_flop = 2.0 * 2.0 * B * NH * double(T) * T * hs / 2.0, bwd_flop = 2.5 * fwd_flop;

  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<bf16> hq(nqkv), hd(nout);
  for (auto& x : hq) x = __float2bfloat16_rn(nd(rng));
  for (auto& x : hd) x = __float2bfloat16_rn(nd(rng));
  Buf<bf16> qkv(nqkv), dout(nout), out(nout), dqkv(nqkv);
  Buf<float> lse(nl), D(nl), dbias(size_t(3) * C);
  GPT_CUDA_CHECK(cudaMemcpy(qkv.p, hq.data(), nqkv * sizeof(bf16), cudaMemcpyHostToDevice));
  GPT_CUDA_CHECK(cudaMemcpy(dout.p, hd.data(), nout * sizeof(bf16), cudaMemcpyHostToDevice));

  auto tflops = [](double flop, float ms) { return flop / (ms * 1e-3) / 1e12; };
  std::printf("flash attention B=%d T=%d C=%d NH=%d hs=%d, %d reps\n", B, T, C, NH, hs, reps);
  bool ok = true;
  std::vector<bf16> ref_out, ref_dqkv;
  for (const bool hopper : {false, true}) {
    gpt::KernelConfig kernels;
    kernels.sm90_attention = hopper;
    set_kernel_config(kernels);
    if (hopper && !flash_attention_uses_hopper(C, NH)) break;
    flash_attention_forward(out, lse, qkv, B, T, C, NH);
    flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH);
    const auto out1 = out.get();
    const auto lse1 = lse.get();
    const auto dqkv1 = dqkv.get();
    flash_attention_forward(out, lse, qkv, B, T, C, NH);
    flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH);
    const bool det = same(out1, out.get()) && same(lse1, lse.get()) && same(dqkv1, dqkv.get());
    ok = ok && det;
    // Largest difference from the generic kernels, relative to the largest magnitude.
    auto rel = [](const std::vector<bf16>& a, const std::vector<bf16>& b) {
      double d = 0, m = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        d = std::max(d, double(std::fabs(__bfloat162float(a[i]) - __bfloat162float(b[i]))));
        m = std::max(m, double(std::fabs(__bfloat162float(b[i]))));
      }
      return m > 0 ? d / m : d;
    };
    if (!hopper) {
      ref_out = out1;
      ref_dqkv = dqkv1;
    }

    const float fwd = time_ms([&] { flash_attention_forward(out, lse, qkv, B, T, C, NH); }, reps);
    const float bwd = time_ms(
        [&] { flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH); }, reps);
    const float bwd_then_bias = time_ms(
        [&] {
          flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH);
          bias_grad(dbias, dqkv, B * T, 3 * C);
        },
        reps);
    const float bwd_bias = time_ms(
        [&] { flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, dbias); }, reps);
    float fwd_kernel = -1, dq = -1, kv = -1, kernel = -1;
    const float scale = float(1.0 / std::sqrt(double(hs)));
    const float sl2 = float(1.4426950408889634 / std::sqrt(double(hs)));
    if (hopper) {  // the kernels alone (the backward without its scratch allocation and memset)
      fwd_kernel = time_ms(
          [&] { sm90::launch_forward<GPT_FLASH90_FWD_CFG>(out, lse, qkv, B, T, C, NH, sl2); },
          reps);
      kernel = time_ms(
          [&] {
            sm90::launch_backward_fused<GPT_FLASH90_FUSED_MINB, GPT_FLASH90_BWD_TAIL_HEADS,
                                        GPT_FLASH90_BWD_SLOT_QUARTERS>(
                dqkv, nullptr, dout, qkv, out, lse, B, T, C, NH, sl2, scale);
          },
          reps);
    } else if (padded_head(hs) == 64 && hs % 8 == 0) {
      fwd_kernel = time_ms(
          [&] { launch_forward<64, true, GPT_FLASH_FWD_CFG>(out, lse, qkv, B, T, C, NH, sl2); },
          reps);
      dq = time_ms(
          [&] {
            launch_backward_dq<64, true, GPT_FLASH_DQ_CFG>(dqkv, D, dout, qkv, out, lse, B, T, C,
                                                           NH, sl2, scale);
          },
          reps);
      kv = time_ms(
          [&] {
            launch_backward_dkdv<64, true, GPT_FLASH_KV_CFG>(dqkv, dout, qkv, lse, D, B, T, C,
                                                             NH, sl2, scale);
          },
          reps);
    }
#define GPT_BENCH_STR2(...) #__VA_ARGS__
#define GPT_BENCH_STR(...) GPT_BENCH_STR2(__VA_ARGS__)
    if (hopper)
      std::printf("wgmma (sm_90a) kernels, forward warpgroups/min blocks %s, fused backward min "
                  "blocks %s, tail heads %s, slot quarters %s\n",
                  GPT_BENCH_STR(GPT_FLASH90_FWD_CFG), GPT_BENCH_STR(GPT_FLASH90_FUSED_MINB),
                  GPT_BENCH_STR(GPT_FLASH90_BWD_TAIL_HEADS),
                  GPT_BENCH_STR(GPT_FLASH90_BWD_SLOT_QUARTERS));
    else
      std::printf("generic (mma.sync) kernels, forward %s, dQ %s, dK/dV %s\n",
                  GPT_BENCH_STR(GPT_FLASH_FWD_CFG), GPT_BENCH_STR(GPT_FLASH_DQ_CFG),
                  GPT_BENCH_STR(GPT_FLASH_KV_CFG));
    std::printf("  forward  %.3f ms  %.1f TFLOP/s", fwd, tflops(fwd_flop, fwd));
    if (fwd_kernel >= 0) std::printf("  (kernel alone, configuration above: %.3f ms)", fwd_kernel);
    std::printf("\n");
    std::printf("  backward %.3f ms  %.1f TFLOP/s", bwd, tflops(bwd_flop, bwd));
    if (dq >= 0) std::printf("  (dQ+D %.3f ms, dK/dV %.3f ms)", dq, kv);
    if (kernel >= 0) std::printf("  (fused kernel %.3f ms)", kernel);
    std::printf("\n  with the qkv bias gradient: bias_grad after %.3f ms, in the call %.3f ms",
                bwd_then_bias, bwd_bias);
    std::printf("\n  run-to-run bit identity: %s\n", det ? "ok" : "FAIL");
    if (hopper)
      std::printf("  vs generic: out %.2e, dqkv %.2e (max |diff| / max |generic|)\n",
                  rel(out1, ref_out), rel(dqkv1, ref_dqkv));
  }
  return ok ? 0 : 1;
}
