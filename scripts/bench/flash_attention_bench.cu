// Times the flash attention kernels (kernels/flash_attention_kernels.cuh with bf16 and fp16
// operands, and on an sm_90 device the bf16 wgmma kernels of kernels/sm90/flash_attention_sm90.cu,
// all in the same run) with CUDA events and checks that forward and backward are bit-identical run
// to run. Also times the backward with the qkv bias gradient (bf16): summed inside the kernels
// (dbias argument) against bias_grad after them; with attention dropout P (6th argument) the
// dropout kernels; and, unless the 7th argument is 0, the fp32 fallback that head sizes without a
// flash kernel take (kernels/attention.cu through fp32 copies, as cuda_backend_bf16.cu runs it),
// with the flash/fallback speed-up.
//
// --sweep: head sizes over 64 time every tile shape of kernels/flash_tiles.h (gpt-train
// --flash-tiles) for each element type and print the table with the fastest forward, backward
// and forward + backward marked (*); shapes that need more shared memory than the device has are
// listed as such (the wgmma kernels, head sizes 64, 96 and 128, have one shape, timed after the
// generic ones). Head sizes up to 64 have one configuration per kernel, compiled in: a
// sweep of those overrides it when compiling (-DGPT_FLASH_FWD_CFG=2,4,2 ..., see below; the values
// in use are printed). --dtype bf16|fp16|both (default both) picks the element types.
//
// Build: make flash-attention-bench (build/bench/flash-attention-bench), or by hand from the
// repository root:
//   nvcc -O3 -std=c++20 -I. -gencode=arch=compute_90a,code=sm_90a -DGPT_HAVE_CUDA
//     --expt-relaxed-constexpr scripts/bench/flash_attention_bench.cu kernels/cuda_common.cu
//     kernels/matmul.cu kernels/lt_gemm.cu kernels/convert.cu kernels/gelu.cu kernels/column_sum.cu
//     kernels/attention.cu kernels/dropout.cu kernels/sm90/gemm_sm90.cu kernels/sm90/capability.cu
//     kernels/sm90/tensor_map.cu
//     -lcublasLt -lcublas -o build/bench/flash-attention-bench          (one command line)
// Run:
//   flash-attention-bench [--sweep] [--dtype D] [B T C NH reps P fallback]
//                                                 (default 16 1024 768 12 20 0 1)
//   e.g. the 1.3B shape: flash-attention-bench --sweep 4 2048 2048 16 20 0 0; the 1.7B shape
//   (head size 96): --sweep 4 1024 2304 24; the 5B shape: 4 2048 4096 32; T 8192: 1 8192 4096 32 5
//   0 0
// FLOPs counted as causal: forward 2·2·B·NH·T²·hs/2, backward 2.5× that.
#include "kernels/flash_attention.cu"
#include "kernels/flash_attention_fp16.cu"
#include "kernels/sm90/flash_attention_sm90.cu"

// The compiled-in configurations timed as kernels alone. Generic kernels, head size 64: forward
// MT, NW, MINB; dQ NW, KC, MINB; dK/dV NW, QC, MINB (kernels/flash_attention_kernels.cuh; 64-row
// streamed tiles). wgmma kernels: forward MINB at head sizes 64, 96 and 128; the one-warpgroup
// fused backward's MINB (head size 64); the backward's interleaved tail heads and their share of
// the resident blocks in quarters.
#ifndef GPT_FLASH_FWD_CFG
#define GPT_FLASH_FWD_CFG flash::kFwdTiles, flash::kFwdWarps, flash::kFwdMinBlocks
#endif
#ifndef GPT_FLASH_DQ_CFG
#define GPT_FLASH_DQ_CFG flash::kDqWarps, flash::kDqKeyChunk, flash::kDqMinBlocks
#endif
#ifndef GPT_FLASH_KV_CFG
#define GPT_FLASH_KV_CFG flash::kKvWarps, flash::kKvQueryChunk, flash::kKvMinBlocks
#endif
#ifndef GPT_FLASH90_FWD_MINB
#define GPT_FLASH90_FWD_MINB sm90::kForwardMinBlocks
#endif
#ifndef GPT_FLASH90_FUSED_MINB
#define GPT_FLASH90_FUSED_MINB sm90::kFusedMinBlocks
#endif
#ifndef GPT_FLASH90_FWD_96_MINB
#define GPT_FLASH90_FWD_96_MINB sm90::kForward96MinBlocks
#endif
#ifndef GPT_FLASH90_FWD_128_MINB
#define GPT_FLASH90_FWD_128_MINB sm90::kForward128MinBlocks
#endif
#ifndef GPT_FLASH90_BWD_TAIL_HEADS
#define GPT_FLASH90_BWD_TAIL_HEADS sm90::kBackwardTailHeads
#endif
#ifndef GPT_FLASH90_BWD_SLOT_QUARTERS
#define GPT_FLASH90_BWD_SLOT_QUARTERS sm90::kBackwardSlotQuarters
#endif

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/attention.cuh"
#include "kernels/convert.cuh"

using namespace gpt::cuda;

namespace {

// The values of a configuration macro ("2, 4, 2"), not its spelling.
std::string values(std::initializer_list<int> v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}
#define GPT_BENCH_VALUES(...) values({__VA_ARGS__}).c_str()

template <class T>
struct Buf {
  T* p = nullptr;
  size_t n;
  explicit Buf(size_t n_) : n(n_) { GPT_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T))); }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
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

// Largest difference from a reference, relative to the reference's largest magnitude.
double rel(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, double(std::fabs(__bfloat162float(a[i]) - __bfloat162float(b[i]))));
    m = std::max(m, double(std::fabs(__bfloat162float(b[i]))));
  }
  return m > 0 ? d / m : d;
}

struct Problem {
  int B, T, C, NH, hs, reps;
  float p;
  uint64_t key = 0x5eed;
  double fwd_flop, bwd_flop;
};

double tflops(double flop, float ms) { return flop / (ms * 1e-3) / 1e12; }

// One element type's buffers: qkv and dout from the same normal draws for both types.
template <class E>
struct Data {
  Buf<E> qkv, dout, out, dqkv;
  Buf<float> lse, D;
  Data(const Problem& pr, const std::vector<float>& hq, const std::vector<float>& hd)
      : qkv(hq.size()),
        dout(hd.size()),
        out(hd.size()),
        dqkv(hq.size()),
        lse(size_t(pr.B) * pr.NH * pr.T),
        D(size_t(pr.B) * pr.NH * pr.T) {
    std::vector<E> q(hq.size()), d(hd.size());
    for (size_t i = 0; i < q.size(); ++i) q[i] = E(hq[i]);
    for (size_t i = 0; i < d.size(); ++i) d[i] = E(hd[i]);
    GPT_CUDA_CHECK(cudaMemcpy(qkv.p, q.data(), q.size() * sizeof(E), cudaMemcpyHostToDevice));
    GPT_CUDA_CHECK(cudaMemcpy(dout.p, d.data(), d.size() * sizeof(E), cudaMemcpyHostToDevice));
  }
  void forward(const Problem& pr) {
    flash_attention_forward(out.p, lse.p, qkv.p, pr.B, pr.T, pr.C, pr.NH, pr.p, pr.key);
  }
  void backward(const Problem& pr) {
    if constexpr (std::is_same_v<E, fp16>)
      flash_attention_backward(dqkv.p, dout.p, qkv.p, out.p, lse.p, pr.B, pr.T, pr.C, pr.NH, pr.p,
                               pr.key);
    else
      flash_attention_backward(dqkv.p, dout.p, qkv.p, out.p, lse.p, pr.B, pr.T, pr.C, pr.NH,
                               nullptr, pr.p, pr.key);
  }
  // Forward and backward twice: whether the second gives the first one's bits.
  bool deterministic(const Problem& pr) {
    forward(pr);
    backward(pr);
    const auto o = out.get();
    const auto l = lse.get();
    const auto g = dqkv.get();
    forward(pr);
    backward(pr);
    return same(o, out.get()) && same(l, lse.get()) && same(g, dqkv.get());
  }
};

struct Timing {
  float fwd = 0, bwd = 0;
  bool det = false;
};

template <class E>
Timing time_current(Data<E>& d, const Problem& pr) {
  Timing t;
  t.det = d.deterministic(pr);
  t.fwd = time_ms([&] { d.forward(pr); }, pr.reps);
  t.bwd = time_ms([&] { d.backward(pr); }, pr.reps);
  return t;
}

void print_times(const Problem& pr, const Timing& t) {
  std::printf("  forward  %.3f ms  %.1f TFLOP/s\n", t.fwd, tflops(pr.fwd_flop, t.fwd));
  std::printf("  backward %.3f ms  %.1f TFLOP/s\n", t.bwd, tflops(pr.bwd_flop, t.bwd));
  std::printf("  run-to-run bit identity: %s\n", t.det ? "ok" : "FAIL");
}

// Every tile shape of kFlashTiles on this problem, as a table; returns false on a determinism
// failure.
template <class E>
bool sweep(Data<E>& d, const Problem& pr, const char* type) {
  std::vector<Timing> rows(gpt::kFlashTileCount);
  std::vector<std::string> skipped(gpt::kFlashTileCount);
  bool ok = true;
  for (int v = 0; v < gpt::kFlashTileCount; ++v) {
    gpt::KernelConfig k = kernel_config();
    k.flash_tiles = v;
    set_kernel_config(k);
    try {
      rows[v] = time_current(d, pr);
      ok = ok && rows[v].det;
    } catch (const std::runtime_error& e) {  // shared memory beyond the device's
      (void)cudaGetLastError();
      skipped[v] = e.what();
    }
  }
  gpt::KernelConfig k = kernel_config();
  k.flash_tiles = gpt::kFlashDefaultTiles;
  set_kernel_config(k);
  auto best = [&](auto value) {
    int b = -1;
    for (int v = 0; v < gpt::kFlashTileCount; ++v)
      if (skipped[v].empty() && (b < 0 || value(rows[v]) < value(rows[b]))) b = v;
    return b;
  };
  const int bf = best([](const Timing& t) { return t.fwd; });
  const int bb = best([](const Timing& t) { return t.bwd; });
  const int bt = best([](const Timing& t) { return t.fwd + t.bwd; });
  std::printf(
      "tile sweep, %s, head size %d (padded %d), --flash-tiles <rows>x<keys>w<warps>; "
      "* fastest, default %s\n",
      type, pr.hs, flash::padded_head(pr.hs), gpt::kFlashTiles[gpt::kFlashDefaultTiles].name);
  std::printf("  %-10s %5s %5s %6s  %9s %8s  %9s %8s  %9s  %s\n", "tiles", "rows", "keys", "warps",
              "fwd ms", "TFLOP/s", "bwd ms", "TFLOP/s", "total ms", "bits");
  for (int v = 0; v < gpt::kFlashTileCount; ++v) {
    const gpt::FlashTiles& t = gpt::kFlashTiles[v];
    if (!skipped[v].empty()) {
      std::printf("  %-10s %5d %5d %6d  skipped: %s\n", t.name, t.rows, t.keys, t.warps,
                  skipped[v].c_str());
      continue;
    }
    const Timing& r = rows[v];
    std::printf("  %-10s %5d %5d %6d  %8.3f%c %8.1f  %8.3f%c %8.1f  %8.3f%c  %s\n", t.name, t.rows,
                t.keys, t.warps, r.fwd, v == bf ? '*' : ' ', tflops(pr.fwd_flop, r.fwd), r.bwd,
                v == bb ? '*' : ' ', tflops(pr.bwd_flop, r.bwd), r.fwd + r.bwd, v == bt ? '*' : ' ',
                r.det ? "same" : "DIFFER");
  }
  if (bt >= 0)
    std::printf("  fastest forward + backward: --flash-tiles %s\n", gpt::kFlashTiles[bt].name);
  return ok;
}

// The generic kernels of head size 64 alone with the compiled-in configuration (bf16).
void time_narrow_kernels(Data<bf16>& d, const Problem& pr, float sl2, float scale) {
  const int B = pr.B, T = pr.T, C = pr.C, NH = pr.NH, reps = pr.reps;
  auto fwd = [&]<int MT, int NW, int MINB>() {
    flash::launch_forward<bf16, 64, true, MT, NW, flash::kBK, MINB>(d.out, d.lse, d.qkv, B, T, C,
                                                                    NH, sl2);
  };
  auto dq = [&]<int NW, int KC, int MINB>() {
    flash::launch_backward_dq<bf16, 64, true, NW, flash::kBK, KC, MINB>(
        d.dqkv, d.D, d.dout, d.qkv, d.out, d.lse, B, T, C, NH, sl2, scale);
  };
  auto kv = [&]<int NW, int QC, int MINB>() {
    flash::launch_backward_dkdv<bf16, 64, true, NW, flash::kBK, QC, MINB>(
        d.dqkv, d.dout, d.qkv, d.lse, d.D, B, T, C, NH, sl2, scale);
  };
  const float f = time_ms([&] { fwd.template operator()<GPT_FLASH_FWD_CFG>(); }, reps);
  const float q = time_ms([&] { dq.template operator()<GPT_FLASH_DQ_CFG>(); }, reps);
  const float k = time_ms([&] { kv.template operator()<GPT_FLASH_KV_CFG>(); }, reps);
  std::printf(
      "  kernels alone: forward (MT, NW, MINB %s) %.3f ms, dQ+D (NW, KC, MINB %s) %.3f ms, "
      "dK/dV (NW, QC, MINB %s) %.3f ms\n",
      GPT_BENCH_VALUES(GPT_FLASH_FWD_CFG), f, GPT_BENCH_VALUES(GPT_FLASH_DQ_CFG), q,
      GPT_BENCH_VALUES(GPT_FLASH_KV_CFG), k);
}

int usage() {
  std::fprintf(stderr,
               "usage: flash-attention-bench [--sweep] [--dtype bf16|fp16|both] "
               "[B T C NH reps P fallback]\n");
  return 2;
}

}  // namespace

int run(int argc, char** argv);

// One line and exit 2 without a GPU, 1 on a CUDA error, as the other benchmarks.
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "usage: flash-attention-bench [--sweep] [--dtype bf16|fp16|both] "
          "[B T C NH reps P fallback]\n  e.g. flash-attention-bench --sweep 4 2048 2048 16 "
          "20 0 0   (GPT-3 XL 1.3B: head size 128)\n");
      return 0;
    }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "flash-attention-bench: no CUDA device is visible\n");
    return 2;
  }
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flash-attention-bench: %s\n", e.what());
    return 1;
  }
}

int run(int argc, char** argv) {
  bool do_sweep = false, bf16s = true, fp16s = true;
  std::vector<const char*> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sweep") {
      do_sweep = true;
    } else if (a == "--dtype" && i + 1 < argc) {
      const std::string t = argv[++i];
      if (t != "bf16" && t != "fp16" && t != "both") return usage();
      bf16s = t != "fp16";
      fp16s = t != "bf16";
    } else if (a == "--help" || a == "-h" || (a.size() > 1 && a[0] == '-' && !std::isdigit(a[1]))) {
      return usage();
    } else {
      pos.push_back(argv[i]);
    }
  }
  auto arg = [&](size_t i, const char* def) { return i < pos.size() ? pos[i] : def; };
  Problem pr;
  pr.B = std::atoi(arg(0, "16"));
  pr.T = std::atoi(arg(1, "1024"));
  pr.C = std::atoi(arg(2, "768"));
  pr.NH = std::atoi(arg(3, "12"));
  pr.reps = std::max(1, std::atoi(arg(4, "20")));
  pr.p = float(std::atof(arg(5, "0")));
  const bool fallback = std::atoi(arg(6, "1")) != 0;
  if (pr.B <= 0 || pr.T <= 0 || !flash_attention_supported(pr.C, pr.NH)) {
    std::fprintf(stderr, "flash-attention-bench: no flash kernel for B=%d T=%d C=%d NH=%d\n", pr.B,
                 pr.T, pr.C, pr.NH);
    return 2;
  }
  const int B = pr.B, T = pr.T, C = pr.C, NH = pr.NH, hs = pr.hs = C / NH, reps = pr.reps;
  const float p = pr.p;
  const uint64_t key = pr.key;
  const size_t nqkv = size_t(B) * T * 3 * C, nout = size_t(B) * T * C;
  pr.fwd_flop = 2.0 * 2.0 * B * NH * double(T) * T * hs / 2.0;
  pr.bwd_flop = 2.5 * pr.fwd_flop;
  const float scale = float(1.0 / std::sqrt(double(hs)));
  const float sl2 = float(1.4426950408889634 / std::sqrt(double(hs)));

  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> hq(nqkv), hd(nout);
  for (auto& x : hq) x = nd(rng);
  for (auto& x : hd) x = nd(rng);

  std::printf("flash attention B=%d T=%d C=%d NH=%d hs=%d, attention dropout %g, %d reps\n", B, T,
              C, NH, hs, p, reps);
  bool ok = true;
  float flash_ms = 0;  // the generic bf16 kernels' forward + backward with bias_grad
  Buf<float> dbias(size_t(3) * C);
  if (bf16s) {
    Data<bf16> d(pr, hq, hd);
    gpt::KernelConfig kernels;
    kernels.sm90_attention = false;
    set_kernel_config(kernels);
    std::printf("generic (mma.sync) kernels, bf16, head size %d padded to %d", hs,
                flash::padded_head(hs));
    if (hs > 64)
      std::printf(", tiles %s\n", gpt::kFlashTiles[gpt::kFlashDefaultTiles].name);
    else
      std::printf(", forward MT, NW, MINB %s, dQ NW, KC, MINB %s, dK/dV NW, QC, MINB %s\n",
                  GPT_BENCH_VALUES(flash::kFwdTiles, flash::kFwdWarps, flash::kFwdMinBlocks),
                  GPT_BENCH_VALUES(flash::kDqWarps, flash::kDqKeyChunk, flash::kDqMinBlocks),
                  GPT_BENCH_VALUES(flash::kKvWarps, flash::kKvQueryChunk, flash::kKvMinBlocks));
    const Timing t = time_current(d, pr);
    ok = ok && t.det;
    print_times(pr, t);
    const auto ref_out = d.out.get(), ref_dqkv = d.dqkv.get();
    const float bwd_then_bias = time_ms(
        [&] {
          d.backward(pr);
          bias_grad(dbias, d.dqkv, B * T, 3 * C);
        },
        reps);
    flash_ms = t.fwd + bwd_then_bias;
    if (flash::padded_head(hs) == 64 && hs % 8 == 0 && p == 0.0f)
      time_narrow_kernels(d, pr, sl2, scale);
    if (do_sweep && hs > 64) ok = sweep(d, pr, "bf16") && ok;

    kernels.sm90_attention = true;
    set_kernel_config(kernels);
    if (flash_attention_uses_hopper(C, NH)) {
      const std::string fused =
          hs == 64 ? std::string("min blocks ") + GPT_BENCH_VALUES(GPT_FLASH90_FUSED_MINB)
                   : std::string("128 keys a block (two MMA warpgroups and a dQ warp)");
      std::printf(
          "wgmma (sm_90a) kernels, bf16, head size %d: forward min blocks %s; fused backward "
          "%s, tail heads %s, slot quarters %s\n",
          hs,
          hs == 64   ? GPT_BENCH_VALUES(GPT_FLASH90_FWD_MINB)
          : hs == 96 ? GPT_BENCH_VALUES(GPT_FLASH90_FWD_96_MINB)
                     : GPT_BENCH_VALUES(GPT_FLASH90_FWD_128_MINB),
          fused.c_str(), GPT_BENCH_VALUES(GPT_FLASH90_BWD_TAIL_HEADS),
          GPT_BENCH_VALUES(GPT_FLASH90_BWD_SLOT_QUARTERS));
      const Timing h = time_current(d, pr);
      ok = ok && h.det;
      print_times(pr, h);
      std::printf("  vs generic: out %.2e, dqkv %.2e (max |diff| / max |generic|)\n",
                  rel(d.out.get(), ref_out), rel(d.dqkv.get(), ref_dqkv));
      // The kernels alone (the backward without its scratch allocation and memset), without
      // dropout.
      const flash::Dropout none{};
      const float fk = time_ms(
          [&] {
            if (hs == 64)
              sm90::launch_forward<64, GPT_FLASH90_FWD_MINB, false>(d.out, d.lse, d.qkv, B, T, C,
                                                                    NH, sl2, none);
            else if (hs == 96)
              sm90::launch_forward<96, GPT_FLASH90_FWD_96_MINB, false>(d.out, d.lse, d.qkv, B, T, C,
                                                                       NH, sl2, none);
            else
              sm90::launch_forward<128, GPT_FLASH90_FWD_128_MINB, false>(d.out, d.lse, d.qkv, B, T,
                                                                         C, NH, sl2, none);
          },
          reps);
      const float bk = time_ms(
          [&] {
            if (hs == 64)
              sm90::launch_backward_fused<GPT_FLASH90_FUSED_MINB, GPT_FLASH90_BWD_TAIL_HEADS,
                                          GPT_FLASH90_BWD_SLOT_QUARTERS, false>(
                  d.dqkv, nullptr, d.dout, d.qkv, d.out, d.lse, B, T, C, NH, sl2, scale, none);
            else if (hs == 96)
              sm90::launch_backward_wide<96, GPT_FLASH90_BWD_TAIL_HEADS,
                                         GPT_FLASH90_BWD_SLOT_QUARTERS, false>(
                  d.dqkv, nullptr, d.dout, d.qkv, d.out, d.lse, B, T, C, NH, sl2, scale, none);
            else
              sm90::launch_backward_wide<128, GPT_FLASH90_BWD_TAIL_HEADS,
                                         GPT_FLASH90_BWD_SLOT_QUARTERS, false>(
                  d.dqkv, nullptr, d.dout, d.qkv, d.out, d.lse, B, T, C, NH, sl2, scale, none);
          },
          reps);
      const float bias_fused = time_ms(
          [&] {
            flash_attention_backward(d.dqkv.p, d.dout.p, d.qkv.p, d.out.p, d.lse.p, B, T, C, NH,
                                     dbias.p, p, key);
          },
          reps);
      std::printf(
          "  kernels alone: forward %.3f ms, fused backward %.3f ms; backward with the "
          "qkv bias summed in the kernels %.3f ms\n",
          fk, bk, bias_fused);
    }
    std::printf("  with the qkv bias gradient (generic): bias_grad after the backward %.3f ms\n",
                bwd_then_bias);
  }
  if (fp16s) {
    Data<fp16> d(pr, hq, hd);
    std::printf("generic (mma.sync) kernels, fp16, head size %d padded to %d%s%s\n", hs,
                flash::padded_head(hs), hs > 64 ? ", tiles " : "",
                hs > 64 ? gpt::kFlashTiles[gpt::kFlashDefaultTiles].name : "");
    const Timing t = time_current(d, pr);
    ok = ok && t.det;
    print_times(pr, t);
    if (do_sweep && hs > 64) ok = sweep(d, pr, "fp16") && ok;
  }
  if (do_sweep && hs <= 64)
    std::printf(
        "--sweep: head size %d has one configuration per kernel (compiled in; override with "
        "-DGPT_FLASH_FWD_CFG=... when building)\n",
        hs);
  if (fallback) {
    // The fp32 attention as the --bf16 backend runs it for head sizes without a flash kernel:
    // fp32 copies in, att [B,NH,T,T] fp32 kept between forward and backward, bf16 copies out.
    Data<bf16> d(pr, hq, hd);
    const size_t natt = size_t(B) * NH * T * T;
    std::printf("fp32 fallback (materialising att: %.2f GB)\n", natt * 4.0 / 1e9);
    Buf<float> q32(nqkv), o32(nout), d32(nout), dq32(nqkv), att(natt);
    const float fwd = time_ms(
        [&] {
          to_fp32(q32, d.qkv, nqkv);
          attention_forward(o32, att, q32, B, T, C, NH, p, key);
          to_bf16(d.out, o32, nout);
        },
        reps);
    const float bwd = time_ms(
        [&] {
          to_fp32(q32, d.qkv, nqkv);
          to_fp32(d32, d.dout, nout);
          GPT_CUDA_CHECK(cudaMemsetAsync(dq32, 0, nqkv * sizeof(float), stream()));
          attention_backward(dq32, d32, q32, att, B, T, C, NH, p, key);
          to_bf16(d.dqkv, dq32, nqkv);
          bias_grad(dbias, d.dqkv, B * T, 3 * C);
        },
        reps);
    std::printf("  forward  %.3f ms  %.1f TFLOP/s\n", fwd, tflops(pr.fwd_flop, fwd));
    std::printf("  backward %.3f ms  %.1f TFLOP/s (with the qkv bias gradient)\n", bwd,
                tflops(pr.bwd_flop, bwd));
    if (flash_ms > 0)
      std::printf(
          "  flash (mma.sync, bf16) forward + backward %.3f ms against the fallback's "
          "%.3f ms: %.2fx faster\n",
          flash_ms, fwd + bwd, (fwd + bwd) / flash_ms);
  }
  return ok ? 0 : 1;
}
