// The Hopper GEMM (kernels/sm90/gemm_sm90.cu) against the cuBLASLt path through the functions
// training calls, on shapes it takes: one round of output tiles and two rounds of the persistent
// grid, each epilogue and both layouts of B. The two sum in different orders, so within bf16
// rounding (the GELUs use tanh.approx: one bf16 step at most); the Hopper kernel is bit-identical
// run to run. Skipped on devices other than compute capability 9.0.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "kernels/sm90/gemm_sm90.cuh"
#include "tests/gpu/gpu_test_util.h"

using namespace gputest;
namespace cu = gpt::cuda;

namespace {

// M, K, N: 120 and 240 output tiles of 128×256 (one and two rounds of the persistent grid on a
// 132-SM H100; fewer tiles than 90% of a round go to cuBLASLt), with fewer k-blocks than
// pipeline stages per tile and with three times as many (stage phases wrap within a tile); both
// with an even number of tile rows (CTA pairs sharing B tiles), and 122 tiles in 61 rows (single
// CTAs).
struct GemmShape {
  int M, K, N;
};
const GemmShape kShapes[] = {{7680, 192, 512}, {15360, 768, 512}, {7808, 768, 512}};

}  // namespace

TEST_CASE(
    "sm90 GEMM: forward with bias, with GELU, the input gradient with and without the GELU "
    "backward match cuBLASLt") {
  for (const GemmShape s : kShapes) {
    if (!cu::gemm_sm90_applies(s.M, s.N, s.K)) {
      MESSAGE("sm90 GEMM does not apply on this device to " << s.M << "x" << s.K << "x" << s.N
                                                               << "; skipped");
      continue;
    }
    const size_t mn = size_t(s.M) * s.N;
    Dev<cu::bf16> a(to_bf16(randn(size_t(s.M) * s.K, 300))), w(to_bf16(randn(size_t(s.N) * s.K, 301, 0.05f)));
    Dev<cu::bf16> bias(to_bf16(randn(s.N, 302)));
    // Each product three times (cuBLASLt, the Hopper kernel, the Hopper kernel again): each of
    // the Hopper outputs close to cuBLASLt's, and their bits the same twice.
    using Outputs = std::vector<std::vector<float>>;
    auto check = [&](const char* what, auto run) {
      std::vector<Outputs> r;
      for (int i = 0; i < 3; ++i) {
        set_sm90_gemm(i == 0 ? gpt::Sm90GemmUse::kNone : gpt::Sm90GemmUse::kAll);
        r.push_back(run());
      }
      set_sm90_gemm(gpt::Sm90GemmUse::kGelu);
      for (size_t k = 0; k < r[0].size(); ++k) {
        close(std::string(what) + " output " + std::to_string(k), r[1][k], r[0][k], 1e-2);
        CHECK(same_bits(r[1][k], r[2][k]));
      }
    };
    check("sm90 bias", [&] {
      Dev<cu::bf16> o(mn);
      cu::matmul_forward_bf16_out(o, a, w, bias, s.M, s.K, s.N);
      return Outputs{to_float(o.download())};
    });
    check("sm90 gelu, pre-activation", [&] {
      Dev<cu::bf16> o(mn), pre(mn);
      cu::matmul_forward_bf16_gelu(o, pre, a, w, bias, s.M, s.K, s.N);
      return Outputs{to_float(o.download()), to_float(pre.download())};
    });
    // dinp [M, N] = dout [M, K] · W [K, N] (B stored [K, N]).
    Dev<cu::bf16> wkn(to_bf16(randn(size_t(s.K) * s.N, 303, 0.05f)));
    check("sm90 input gradient", [&] {
      Dev<cu::bf16> o(mn);
      cu::matmul_backward_bf16_dinp(nullptr, o, a, wkn, s.M, s.N, s.K);
      return Outputs{to_float(o.download())};
    });
    // The same product with the GELU backward fused (the MLP's fc2 input gradient): against
    // the unfused path (cuBLASLt, then gelu_backward_bf16_bias with tanhf), dx, the recomputed
    // GELU output and the bias gradient's column sums added to a non-zero dbias.
    Dev<cu::bf16> pre(to_bf16(randn(mn, 304)));
    const std::vector<float> dbias0 = randn(s.N, 305);
    check("sm90 input gradient + GELU backward: dx, GELU, dbias", [&] {
      Dev<cu::bf16> dx(mn), act(mn);
      Dev<float> dbias(dbias0);
      cu::matmul_backward_bf16_dinp_gelu(dx, act, dbias, a, wkn, pre, s.M, s.N, s.K);
      return Outputs{to_float(dx.download()), to_float(act.download()), dbias.download()};
    });
    // A layer that kept its forward's GELU output passes no act: dx and dbias keep their bits
    // on either path.
    for (const gpt::Sm90GemmUse use : {gpt::Sm90GemmUse::kNone, gpt::Sm90GemmUse::kAll}) {
      set_sm90_gemm(use);
      Dev<cu::bf16> dx(mn), dx_kept(mn), act(mn);
      Dev<float> dbias(dbias0), dbias_kept(dbias0);
      cu::matmul_backward_bf16_dinp_gelu(dx, act, dbias, a, wkn, pre, s.M, s.N, s.K);
      cu::matmul_backward_bf16_dinp_gelu(dx_kept, nullptr, dbias_kept, a, wkn, pre, s.M, s.N, s.K);
      CHECK(same_bits(to_float(dx_kept.download()), to_float(dx.download())));
      CHECK(same_bits(dbias_kept.download(), dbias.download()));
    }
    set_sm90_gemm(gpt::Sm90GemmUse::kGelu);
  }
}

TEST_CASE("sm90 GEMM: --sm90-gemm gelu leaves the fc + GELU forward to cuBLASLt from K 2048") {
  // 120 output tiles, as the first shape above, but inputs 2048 wide: the default gives
  // cuBLASLt's bits (off), not the Hopper kernel's (all); the input gradient with the GELU
  // backward stays on the Hopper kernel.
  const GemmShape s{7680, 2048, 512};
  if (!cu::gemm_sm90_applies(s.M, s.N, s.K)) {
    MESSAGE("sm90 GEMM does not apply on this device; skipped");
    return;
  }
  const size_t mn = size_t(s.M) * s.N;
  Dev<cu::bf16> a(to_bf16(randn(size_t(s.M) * s.K, 310))), w(to_bf16(randn(size_t(s.N) * s.K, 311, 0.02f)));
  Dev<cu::bf16> bias(to_bf16(randn(s.N, 312)));
  auto forward = [&](gpt::Sm90GemmUse use) {
    set_sm90_gemm(use);
    Dev<cu::bf16> o(mn), pre(mn);
    cu::matmul_forward_bf16_gelu(o, pre, a, w, bias, s.M, s.K, s.N);
    return to_float(o.download());
  };
  const auto by_default = forward(gpt::Sm90GemmUse::kGelu);
  CHECK(same_bits(by_default, forward(gpt::Sm90GemmUse::kNone)));
  CHECK_FALSE(same_bits(by_default, forward(gpt::Sm90GemmUse::kAll)));
  // dinp [M, N] = dout [M, K] · W [K, N] with the GELU backward.
  Dev<cu::bf16> wkn(to_bf16(randn(size_t(s.K) * s.N, 313, 0.02f))), pre(to_bf16(randn(mn, 314)));
  auto backward = [&](gpt::Sm90GemmUse use) {
    set_sm90_gemm(use);
    Dev<cu::bf16> dx(mn);
    Dev<float> dbias(std::vector<float>(s.N, 0.0f));
    cu::matmul_backward_bf16_dinp_gelu(dx, nullptr, dbias, a, wkn, pre, s.M, s.N, s.K);
    return to_float(dx.download());
  };
  const auto dx_default = backward(gpt::Sm90GemmUse::kGelu);
  CHECK(same_bits(dx_default, backward(gpt::Sm90GemmUse::kAll)));
  CHECK_FALSE(same_bits(dx_default, backward(gpt::Sm90GemmUse::kNone)));
  set_sm90_gemm(gpt::Sm90GemmUse::kGelu);
}
