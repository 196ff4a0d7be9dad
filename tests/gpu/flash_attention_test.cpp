// Flash attention (kernels/flash_attention.cuh) against the fp32 CPU attention: bf16 q, k, v and
// dout in, bf16 out and dqkv, fp32 lse; within kBF16 of the fp32 reference computed from the
// unrounded inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"
#include "tests/gpu/gpu_test_util.h"

using namespace gputest;
namespace cpu = gpt::cpu;
namespace cu = gpt::cuda;

namespace {

void check_flash_attention(const Shape s) {
  const int B = s.B, T = s.T, C = s.C, NH = s.NH, hs = C / NH;
  REQUIRE(cu::flash_attention_supported(C, NH));
  auto qkv = randn(size_t(B) * T * 3 * C, 140);
  std::vector<float> out(size_t(B) * T * C), att(size_t(B) * NH * T * T);
  cpu::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  Dev<cu::bf16> d_qkv(to_bf16(qkv)), d_out(out.size());
  Dev<float> d_lse(size_t(B) * NH * T);
  cu::flash_attention_forward(d_out, d_lse, d_qkv, B, T, C, NH);
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
  close("flash fwd lse", d_lse.download(), lse, kBF16);

  auto dout = randn(out.size(), 141);
  std::vector<float> dqkv(qkv.size(), 0.0f);
  cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
  Dev<cu::bf16> d_dout(to_bf16(dout)), d_dqkv(qkv.size());  // poisoned: every element written
  cu::flash_attention_backward(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH);
  const auto got = to_float(d_dqkv.download());
  close("flash bwd dqkv", got, dqkv, kBF16);
  // Deterministic run to run.
  d_dqkv.poison();
  cu::flash_attention_backward(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH);
  CHECK(same_bits(to_float(d_dqkv.download()), got));
  // With a bias gradient: the column sums of the stored dqkv are added to it with bias_grad's
  // bits (the wgmma kernels sum them as they store dqkv when T % 64 == 0).
  const auto start = randn(size_t(3) * C, 142);
  Dev<float> fused(start), separate(start);
  d_dqkv.poison();
  cu::flash_attention_backward(d_dqkv, d_dout, d_qkv, d_out, d_lse, B, T, C, NH, fused);
  CHECK(same_bits(to_float(d_dqkv.download()), got));
  cu::bias_grad(separate, d_dqkv, B * T, 3 * C);
  CHECK(same_bits(fused.download(), separate.download()));
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
  CHECK(!cu::flash_attention_supported(128 * 4, 4));  // hs 128: the fp32 path
  CHECK(!cu::flash_attention_supported(90, 5));       // hs 18: not a multiple of 4
}
