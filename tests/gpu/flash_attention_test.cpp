// Flash attention (kernels/flash_attention.cuh) against the fp32 CPU attention: bf16 (or fp16)
// q, k, v and dout in, bf16 (fp16) out and dqkv, fp32 lse; within kBF16 of the fp32 reference
// computed from the unrounded inputs. With attention dropout: the same comparison under the same
// mask, and the mask itself read back bit for bit. Head sizes over 64 under every tile shape of
// kernels/flash_tiles.h.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "kernels/dropout_mask.h"
#include "kernels/ops.h"
#include "kernels/sm90/capability.cuh"
#include "tests/gpu/gpu_test_util.h"

using namespace gputest;
namespace cpu = gpt::cpu;
namespace cu = gpt::cuda;

namespace {

using cu::bf16;
using cu::fp16;

// Host rounding to the element type E (bf16 or fp16).
template <class E>
std::vector<E> to_elem(const std::vector<float>& v) {
  if constexpr (std::is_same_v<E, fp16>)
    return to_fp16(v);
  else
    return to_bf16(v);
}

// The backward of either element type without a bias gradient (fp16's takes none).
template <class E>
void flash_backward(E* dqkv, const E* dout, const E* qkv, const E* out, const float* lse, int B,
                    int T, int C, int NH, float p, uint64_t key, gpt::HeadRange heads) {
  if constexpr (std::is_same_v<E, fp16>)
    cu::flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, p, key, heads);
  else
    cu::flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, nullptr, p, key, heads);
}

// heads: the shape's heads as some of a bigger model's (a tensor-parallel rank's), for the mask.
template <class E = bf16>
void check_flash_attention(const Shape s, float p = 0.0f, uint64_t key = 0,
                           gpt::HeadRange heads = {}) {
  const int B = s.B, T = s.T, C = s.C, NH = s.NH, hs = C / NH;
  REQUIRE(cu::flash_attention_supported(C, NH));
  auto qkv = randn(size_t(B) * T * 3 * C, 140);
  std::vector<float> out(size_t(B) * T * C), att(size_t(B) * NH * T * T);
  cpu::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, p, key, heads);
  Dev<E> d_qkv(to_elem<E>(qkv)), d_out(out.size());
  Dev<float> d_lse(size_t(B) * NH * T);
  cu::flash_attention_forward(d_out, d_lse, d_qkv, B, T, C, NH, p, key, heads);
  Dev<float> d_out32(out.size());
  cu::to_fp32(d_out32, d_out, out.size());
  close("flash fwd out", d_out32.download(), out, kBF16);
  // lse: base-2 logsumexp of the scaled causal scores, from the fp32 inputs on the host.
  std::vector<float> lse(size_t(B) * NH * T);
  const double scale = 1.0 / std::sqrt(double(hs));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const float* q = &qkv[(size_t(b) * T + t) * 3 * C + size_t(h) * hs];
        std::vector<double> sc(t + 1);
        double mx = -INFINITY;
        for (int j = 0; j <= t; ++j) {
          const float* k = &qkv[(size_t(b) * T + j) * 3 * C + C + size_t(h) * hs];
          double d = 0;
          for (int i = 0; i < hs; ++i) d += double(q[i]) * k[i];
          sc[j] = d * scale;
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (double v : sc) sum += std::exp(v - mx);
        lse[(size_t(b) * NH + h) * T + t] = float((mx + std::log(sum)) / std::log(2.0));
      }
  close("flash fwd lse", d_lse.download(), lse, kBF16);  // before dropout, as the CPU's att
  // Deterministic run to run (forward).
  const auto out_bits = to_float(d_out.download());
  d_out.poison();
  cu::flash_attention_forward(d_out, d_lse, d_qkv, B, T, C, NH, p, key, heads);
  CHECK(same_bits(to_float(d_out.download()), out_bits));

  auto dout = randn(out.size(), 141);
  std::vector<float> dqkv(qkv.size(), 0.0f);
  cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH, p, key,
                          heads);
  Dev<E> d_dout(to_elem<E>(dout)), d_dqkv(qkv.size());  // poisoned: every element written
  flash_backward<E>(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH, p, key, heads);
  const auto got = to_float(d_dqkv.download());
  close("flash bwd dqkv", got, dqkv, kBF16);
  // Deterministic run to run.
  d_dqkv.poison();
  flash_backward<E>(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH, p, key, heads);
  CHECK(same_bits(to_float(d_dqkv.download()), got));
  // With a bias gradient (bf16: the fp16 backward takes none, its path sums its own): the column
  // sums of the stored dqkv are added to it with bias_grad's bits (the wgmma kernels sum them as
  // they store dqkv when T % 64 == 0).
  if constexpr (std::is_same_v<E, bf16>) {
    const auto start = randn(size_t(3) * C, 142);
    Dev<float> fused(start), separate(start);
    d_dqkv.poison();
    cu::flash_attention_backward(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH, fused, p, key,
                                 heads);
    CHECK(same_bits(to_float(d_dqkv.download()), got));
    cu::bias_grad(separate, d_dqkv, B * T, 3 * C);
    CHECK(same_bits(fused.download(), separate.download()));
  }
}

// The dropout mask read back bit for bit: q = k = 0 (every visible probability 1/(i+1)), and per
// window of hs positions from `base`, v[j] = e_(j - base) and dout[i] = e_(i - base) for j and i
// in the window (zero elsewhere), so out[i][j - base] = keep(i,j)/(1-p)/(i+1) (forward kernel)
// and dv[j][i - base] = the same dropped probability (dK/dV kernel): nonzero exactly where
// attention_keep keeps. T > hs takes several windows (and several 128-blocks of the mask).
template <class E = bf16>
void check_mask_bits(const Shape s, float p, uint64_t key, gpt::HeadRange heads = {}) {
  const int B = s.B, T = s.T, C = s.C, NH = s.NH, hs = C / NH;
  const uint32_t thr = gpt::dropout_threshold(p);
  size_t wrong_fwd = 0, wrong_bwd = 0, kept = 0, visible = 0;
  for (int base = 0; base < T; base += hs) {
    CAPTURE(base);
    const auto in_window = [&](int x) { return x >= base && x < base + hs; };
    std::vector<float> qkv(size_t(B) * T * 3 * C, 0.0f), dout(size_t(B) * T * C, 0.0f);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h)
        for (int t = base; t < std::min(T, base + hs); ++t) {
          qkv[(size_t(b) * T + t) * 3 * C + 2 * C + size_t(h) * hs + t - base] = 1.0f;
          dout[(size_t(b) * T + t) * C + size_t(h) * hs + t - base] = 1.0f;
        }
    Dev<E> d_qkv(to_elem<E>(qkv)), d_out(dout.size()), d_dout(to_elem<E>(dout)), d_dqkv(qkv.size());
    Dev<float> d_lse(size_t(B) * NH * T);
    cu::flash_attention_forward(d_out, d_lse, d_qkv, B, T, C, NH, p, key, heads);
    flash_backward<E>(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH, p, key, heads);
    const auto out = to_float(d_out.download()), dqkv = to_float(d_dqkv.download());
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h)
        for (int i = 0; i < T; ++i)
          for (int j = 0; j <= i; ++j) {
            if (!in_window(i) && !in_window(j)) continue;
            const bool keep = gpt::attention_keep(key, heads.model_bh(b * NH + h, NH), i, j, thr);
            if (in_window(j)) {
              kept += keep;
              ++visible;
              const size_t o = (size_t(b) * T + i) * C + size_t(h) * hs + j - base;
              wrong_fwd += keep != (out[o] != 0.0f);
            }
            if (in_window(i)) {
              const size_t dv = (size_t(b) * T + j) * 3 * C + 2 * C + size_t(h) * hs + i - base;
              wrong_bwd += keep != (dqkv[dv] != 0.0f);
            }
          }
  }
  CHECK(wrong_fwd == 0);
  CHECK(wrong_bwd == 0);
  CHECK(kept > 0);
  CHECK(kept < visible);
}

}  // namespace

TEST_CASE("flash attention (bf16 tensor cores) forward and backward vs the fp32 CPU") {
  // Head sizes 24 (padded to 32), 64, 16, 32 and 20 (not a multiple of 8: 8-byte copies);
  // T not a multiple of the tiles (64 keys, 128 forward rows, 128 dK/dV keys), and longer (1024:
  // the fused wgmma backward's dQ sums over 16 key tiles in order); 60 heads, more than the wgmma
  // forward interleaves at the end of its grid (48), so both of its block orders run.
  // Head size 64 runs twice on an sm_90 device: the wgmma kernels, then the generic ones.
  for (const Shape s : {Shape{2, 37, 96, 4}, Shape{2, 128, 768, 12}, Shape{1, 200, 64, 4},
                        Shape{1, 512, 768, 12}, Shape{1, 300, 128, 4}, Shape{2, 100, 80, 4},
                        Shape{1, 300, 256, 4}, Shape{2, 1024, 128, 2}, Shape{5, 128, 768, 12}}) {
    CAPTURE(s.T);
    CAPTURE(s.C / s.NH);
    const bool hopper = cu::flash_attention_uses_hopper(s.C, s.NH);
    CAPTURE(hopper);
    check_flash_attention(s);
    if (hopper) {
      set_sm90_attention(false);
      REQUIRE(!cu::flash_attention_uses_hopper(s.C, s.NH));
      check_flash_attention(s);
      set_sm90_attention(true);
    }
  }
  CHECK(!cu::flash_attention_supported(136 * 4, 4));  // hs 136: the fp32 path
  CHECK(!cu::flash_attention_supported(90, 5));       // hs 18: not a multiple of 4
}

TEST_CASE("flash attention, head sizes 80, 96, 128 (and 68, 72, 100 padded) vs the fp32 CPU") {
  // T not a multiple of the 64-row tiles, and 2048 (32 key tiles per row tile); 100 and 68 are
  // not multiples of 8 (8-byte copies into the 128 and 80 tiles).
  // Head sizes 96 and 128 run twice on an sm_90 device: the wgmma kernels, then the generic ones.
  for (const Shape s : {Shape{2, 100, 320, 4}, Shape{1, 300, 384, 4}, Shape{2, 257, 512, 4},
                        Shape{1, 2048, 256, 2}, Shape{1, 1024, 192, 2}, Shape{1, 130, 288, 4},
                        Shape{1, 200, 400, 4}, Shape{1, 100, 272, 4}, Shape{3, 64, 1280, 10},
                        Shape{2, 128, 512, 4}, Shape{1, 1000, 256, 2}}) {
    CAPTURE(s.T);
    CAPTURE(s.C / s.NH);
    const bool hopper = cu::flash_attention_uses_hopper(s.C, s.NH);
    CAPTURE(hopper);
    CHECK(hopper == ((s.C / s.NH == 96 || s.C / s.NH == 128) && gpt::cuda::sm90_available()));
    check_flash_attention(s);
    if (hopper) {
      set_sm90_attention(false);
      check_flash_attention(s);
      set_sm90_attention(true);
    }
  }
}

TEST_CASE("flash attention with attention dropout: the CPU's mask, within bf16, repeatable") {
  // Head sizes 64, 96 and 128 run twice on an sm_90 device: the wgmma kernels, then the mma.sync
  // ones; both drop exactly the CPU's elements (check_mask_bits).
  const uint64_t key = gpt::attention_dropout_key(gpt::dropout_step_key(1234, 7, 1), 3);
  const auto both_paths = [](const Shape s, auto&& check) {
    const bool hopper = cu::flash_attention_uses_hopper(s.C, s.NH);
    CAPTURE(hopper);
    check();
    if (hopper) {
      set_sm90_attention(false);
      check();
      set_sm90_attention(true);
    }
  };
  for (const Shape s : {Shape{2, 37, 96, 4}, Shape{2, 128, 768, 12}, Shape{1, 300, 128, 4},
                        Shape{2, 100, 80, 4}, Shape{1, 1024, 128, 2}, Shape{2, 257, 512, 4},
                        Shape{1, 300, 384, 4}, Shape{1, 200, 320, 4}, Shape{1, 2048, 256, 2},
                        Shape{2, 128, 512, 4}}) {
    for (const float p : {0.1f, 0.5f}) {
      CAPTURE(s.T);
      CAPTURE(s.C / s.NH);
      CAPTURE(p);
      both_paths(s, [&] { check_flash_attention(s, p, key); });
    }
  }
  // and past one 128-block of the mask: T 300 and 200 at head sizes 128, 96, 80 and 64
  for (const Shape s : {Shape{2, 64, 256, 4}, Shape{2, 128, 256, 2}, Shape{1, 96, 192, 2},
                        Shape{1, 37, 80, 2}, Shape{2, 128, 512, 4}, Shape{1, 100, 512, 4},
                        Shape{2, 300, 256, 2}, Shape{1, 300, 384, 4}, Shape{1, 200, 160, 2},
                        Shape{2, 200, 256, 4}})
    for (const float p : {0.1f, 0.5f}) {
      CAPTURE(s.T);
      CAPTURE(s.C / s.NH);
      CAPTURE(p);
      both_paths(s, [&] { check_mask_bits(s, p, key); });
    }
}

TEST_CASE("flash attention (fp16 tensor cores) forward and backward vs the fp32 CPU") {
  // The shapes of the bf16 cases: head sizes 16 to 128, 20, 68 and 100 (8-byte copies), T not a
  // multiple of the tiles and long; fp16 never takes the wgmma kernels.
  for (const Shape s :
       {Shape{2, 37, 96, 4}, Shape{2, 128, 768, 12}, Shape{1, 300, 128, 4}, Shape{2, 100, 80, 4},
        Shape{2, 1024, 128, 2}, Shape{2, 100, 320, 4}, Shape{1, 300, 384, 4}, Shape{2, 257, 512, 4},
        Shape{1, 2048, 256, 2}, Shape{1, 200, 400, 4}, Shape{1, 100, 272, 4}}) {
    CAPTURE(s.T);
    CAPTURE(s.C / s.NH);
    check_flash_attention<fp16>(s);
  }
  const uint64_t key = gpt::attention_dropout_key(gpt::dropout_step_key(99, 3, 0), 1);
  for (const Shape s : {Shape{2, 128, 768, 12}, Shape{1, 300, 384, 4}, Shape{2, 257, 512, 4}})
    for (const float p : {0.1f, 0.5f}) {
      CAPTURE(s.T);
      CAPTURE(s.C / s.NH);
      CAPTURE(p);
      check_flash_attention<fp16>(s, p, key);
    }
  for (const Shape s : {Shape{2, 64, 256, 4}, Shape{1, 96, 192, 2}})
    check_mask_bits<fp16>(s, 0.1f, key);
  check_mask_bits<fp16>(Shape{2, 64, 256, 4}, 0.1f, key, gpt::HeadRange{12, 4});
}

TEST_CASE("attention dropout on a tensor-parallel rank's heads: the model's heads' mask") {
  // The call's heads as heads `first` .. of a model with `total` per sample: every kernel
  // family (wgmma at head sizes 64, 96, 128 on an sm_90 device, then mma.sync) drops what the
  // model's heads drop, bit for bit, and matches the CPU under the same range.
  const uint64_t key = gpt::attention_dropout_key(gpt::dropout_step_key(77, 5, 2), 4);
  for (const auto& [s, heads] :
       {std::pair{Shape{2, 64, 256, 4}, gpt::HeadRange{12, 4}},
        std::pair{Shape{2, 96, 384, 4}, gpt::HeadRange{8, 4}},
        std::pair{Shape{2, 128, 512, 4}, gpt::HeadRange{16, 12}},
        std::pair{Shape{1, 37, 80, 2}, gpt::HeadRange{6, 2}}}) {
    CAPTURE(s.C / s.NH);
    CAPTURE(heads.first);
    const bool hopper = cu::flash_attention_uses_hopper(s.C, s.NH);
    for (const bool sm90 : {true, false}) {
      if (sm90 && !hopper) continue;
      CAPTURE(sm90);
      set_sm90_attention(sm90);
      check_mask_bits(s, 0.1f, key, heads);
      check_flash_attention(Shape{s.B, 200, s.C, s.NH}, 0.1f, key, heads);
    }
    set_sm90_attention(true);
  }
}

TEST_CASE("flash attention, head sizes 80, 96, 128: every tile shape (bf16, fp16, dropout)") {
  // Each shape of kernels/flash_tiles.h that this device's shared memory takes: T not a multiple
  // of any tile's rows or keys, and long enough for several K/V tiles per row block.
  const uint64_t key = gpt::attention_dropout_key(gpt::dropout_step_key(5, 1, 0), 2);
  int device = 0, smem = 0;
  GPT_CUDA_CHECK(cudaGetDevice(&device));
  GPT_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  for (int v = 0; v < gpt::kFlashTileCount; ++v) {
    const gpt::FlashTiles& t = gpt::kFlashTiles[v];
    CAPTURE(t.name);
    // The largest block (dQ at head size 128): 3·16·warps query rows and 4·keys K/V rows of 136.
    if (size_t(3 * 16 * t.warps + 4 * t.keys) * 136 * 2 > size_t(smem)) {
      MESSAGE("tiles " << t.name << ": more shared memory than this device has, skipped");
      continue;
    }
    set_flash_tiles(v);
    set_sm90_attention(false);  // head sizes 96 and 128 reach these only with wgmma off
    for (const Shape s : {Shape{2, 300, 320, 4}, Shape{1, 333, 384, 4}, Shape{2, 257, 512, 4},
                          Shape{1, 1024, 256, 2}}) {
      CAPTURE(s.C / s.NH);
      check_flash_attention<bf16>(s);
      check_flash_attention<fp16>(s);
      check_flash_attention<bf16>(s, 0.1f, key);
    }
    // each tile's fragments bit for bit, in one 128-block of the mask and across three
    check_mask_bits<bf16>(Shape{2, 128, 512, 4}, 0.3f, key);
    check_mask_bits<bf16>(Shape{1, 300, 256, 2}, 0.3f, key);
  }
  set_flash_tiles(gpt::kFlashDefaultTiles);
  set_sm90_attention(true);
}
