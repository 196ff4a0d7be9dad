// Every CUDA kernel against its CPU reference (kernels/ops.h) on random inputs.
// fp32: within kF32 (1e-5 relative + 1e-5 of the tensor's max); bf16: within kBF16 (2e-2).
// Gradient outputs start from random values, so the += contract is checked too; written outputs
// start poisoned (NaN), so an unwritten element fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/dropout_mask.h"
#include "kernels/master_split.h"
#include "kernels/ops.h"
#include "tests/gpu/gpu_test_util.h"

using namespace gputest;
namespace cpu = gpt::cpu;
namespace cu = gpt::cuda;

namespace {
// Odd sizes (not multiples of 32) and one GPT-2-like size.
const Shape kShapes[] = {{3, 37, 96, 4}, {2, 64, 768, 12}};
}  // namespace

TEST_CASE("encoder forward and backward are bit-identical to the CPU") {
  for (const Shape s : kShapes) {
    const int B = s.B, T = s.T, C = s.C, V = 50;  // small V: tokens repeat within the batch
    const int maxT = T + 3;
    auto wte = randn(size_t(V) * C, 1), wpe = randn(size_t(maxT) * C, 2);
    auto inp = randint(size_t(B) * T, V, 3);
    std::vector<float> out(size_t(B) * T * C);
    cpu::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
    Dev<float> d_out(out.size()), d_wte(wte), d_wpe(wpe);
    Dev<int> d_inp(inp);
    cu::encoder_forward(d_out, d_inp, d_wte, d_wpe, B, T, C);
    CHECK(same_bits(d_out.download(), out));

    auto dout = randn(out.size(), 4);
    auto dwte = randn(wte.size(), 5), dwpe = randn(wpe.size(), 6);
    Dev<float> d_dout(dout), d_dwte(dwte), d_dwpe(dwpe);
    cpu::encoder_backward(dwte.data(), dwpe.data(), dout.data(), inp.data(), B, T, C);
    cu::encoder_backward(d_dwte, d_dwpe, d_dout, d_inp, B, T, C);
    // Same per-element summation order as the CPU: exact.
    CHECK(same_bits(d_dwte.download(), dwte));
    CHECK(same_bits(d_dwpe.download(), dwpe));
  }
}

TEST_CASE("layernorm forward and backward") {
  // C 96, 768 and 1600 take the 16-byte kernels (the row-chunk backward with fp32 dout here),
  // C 1602 (not a multiple of 4) the scalar forward and the two-pass backward.
  for (const Shape s : {kShapes[0], kShapes[1], Shape{1, 20, 1600, 25}, Shape{1, 9, 1602, 2}}) {
    const int B = s.B, T = s.T, C = s.C, N = B * T;
    auto inp = randn(size_t(N) * C, 10, 2.0f);
    for (size_t i = 0; i < inp.size(); ++i) inp[i] += 0.5f;  // non-zero mean
    auto w = randn(C, 11), b = randn(C, 12);
    std::vector<float> out(inp.size()), mean(N), rstd(N);
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), B,
                           T, C);
    Dev<float> d_out(out.size()), d_mean(N), d_rstd(N), d_inp(inp), d_w(w), d_b(b);
    cu::layernorm_forward(d_out, d_mean, d_rstd, d_inp, d_w, d_b, B, T, C);
    close("ln fwd out", d_out.download(), out, kF32);
    close("ln fwd mean", d_mean.download(), mean, kF32);
    close("ln fwd rstd", d_rstd.download(), rstd, kF32);

    auto dout = randn(out.size(), 13);
    auto dinp = randn(inp.size(), 14), dw = randn(C, 15), db = randn(C, 16);
    Dev<float> d_dout(dout), d_dinp(dinp), d_dw(dw), d_db(db);
    cpu::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(),
                            mean.data(), rstd.data(), B, T, C);
    // Feed the GPU the CPU's saved statistics, so only the backward is under test.
    d_mean.upload(mean);
    d_rstd.upload(rstd);
    cu::layernorm_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, d_mean, d_rstd, B, T, C);
    close("ln bwd dinp", d_dinp.download(), dinp, kF32);
    close("ln bwd dweight", d_dw.download(), dw, kF32);
    close("ln bwd dbias", d_db.download(), db, kF32);
  }
}

TEST_CASE("matmul forward and backward, fp32 and bf16") {
  struct MM {
    int B, T, C, OC;
  };
  for (const MM s : {MM{3, 37, 96, 160}, MM{2, 64, 768, 2304}, MM{1, 50, 64, 1000}}) {
    const int B = s.B, T = s.T, C = s.C, OC = s.OC, N = B * T;
    auto inp = randn(size_t(N) * C, 20), w = randn(size_t(OC) * C, 21, 0.05f),
         bias = randn(OC, 22);
    Dev<float> d_inp(inp), d_w(w), d_bias(bias);
    for (bool with_bias : {true, false}) {
      std::vector<float> out(size_t(N) * OC);
      cpu::matmul_forward(out.data(), inp.data(), w.data(), with_bias ? bias.data() : nullptr, B,
                          T, C, OC);
      Dev<float> d_out(out.size());
      cu::matmul_forward(d_out, d_inp, d_w, with_bias ? d_bias.get() : nullptr, B, T, C, OC);
      close("matmul fwd", d_out.download(), out, kF32);

      // bf16 operands, fp32 accumulation and output
      Dev<cu::bf16> h_inp(inp.size()), h_w(w.size());
      cu::to_bf16(h_inp, d_inp, inp.size());
      cu::to_bf16(h_w, d_w, w.size());
      d_out.poison();
      cu::matmul_forward_bf16(d_out, h_inp, h_w, with_bias ? d_bias.get() : nullptr, B, T, C, OC);
      close("matmul fwd bf16", d_out.download(), out, kBF16);
    }
    auto dout = randn(size_t(N) * OC, 23);
    auto dinp0 = randn(inp.size(), 24), dw0 = randn(w.size(), 25), db0 = randn(OC, 26);
    for (bool full : {true, false}) {  // full: dinp and dbias too; else both nullptr
      auto dinp = dinp0, dw = dw0, db = db0;
      cpu::matmul_backward(full ? dinp.data() : nullptr, dw.data(), full ? db.data() : nullptr,
                           dout.data(), inp.data(), w.data(), B, T, C, OC);
      Dev<float> d_dout(dout), d_dinp(dinp0), d_dw(dw0), d_db(db0);
      cu::matmul_backward(full ? d_dinp.get() : nullptr, d_dw, full ? d_db.get() : nullptr, d_dout,
                          d_inp, d_w, B, T, C, OC);
      close("matmul bwd dweight", d_dw.download(), dw, kF32);
      if (full) {
        close("matmul bwd dinp", d_dinp.download(), dinp, kF32);
        close("matmul bwd dbias", d_db.download(), db, kF32);
      } else {
        CHECK(same_bits(d_dinp.download(), dinp0));  // untouched
        CHECK(same_bits(d_db.download(), db0));
      }
    }
    {  // bf16 backward: compare the increments (the += base is exact in fp32 either way)
      std::vector<float> dinp(inp.size(), 0.0f), dw(w.size(), 0.0f), db(OC, 0.0f);
      cpu::matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), B,
                           T, C, OC);
      Dev<float> d_dout(dout), d_dinp(std::vector<float>(dinp.size(), 0.0f)),
          d_dw(std::vector<float>(dw.size(), 0.0f)), d_db(std::vector<float>(OC, 0.0f));
      Dev<cu::bf16> h_inp(inp.size()), h_w(w.size());
      cu::to_bf16(h_inp, d_inp, inp.size());
      cu::to_bf16(h_w, d_w, w.size());
      cu::matmul_backward_bf16(d_dinp, d_dw, d_db, d_dout, h_inp, h_w, B, T, C, OC);
      close("matmul bwd bf16 dinp", d_dinp.download(), dinp, kBF16);
      close("matmul bwd bf16 dweight", d_dw.download(), dw, kBF16);
      close("matmul bwd bf16 dbias (fp32 dout)", d_db.download(), db, kF32);
    }
  }
}

TEST_CASE("gelu forward and backward") {
  const int N = 100003;
  auto x = randn(N, 30, 3.0f), dout = randn(N, 31), dinp = randn(N, 32);
  std::vector<float> out(N);
  cpu::gelu_forward(out.data(), x.data(), N);
  Dev<float> d_x(x), d_out(N), d_dout(dout), d_dinp(dinp);
  cu::gelu_forward(d_out, d_x, N);
  close("gelu fwd", d_out.download(), out, kF32);
  cpu::gelu_backward(dinp.data(), x.data(), dout.data(), N);
  cu::gelu_backward(d_dinp, d_x, d_dout, N);
  close("gelu bwd", d_dinp.download(), dinp, kF32);

  // Fused bf16 forward and the written (not added) backward; outputs start poisoned.
  Dev<cu::bf16> d_out16(N);
  Dev<float> d_out16f(N), d_set(N);
  cu::gelu_forward_bf16(d_out16, d_x, N);
  cu::to_fp32(d_out16f, d_out16, N);
  close("gelu fwd bf16", d_out16f.download(), out, kBF16);
  std::vector<float> dset(N, 0.0f);
  cpu::gelu_backward(dset.data(), x.data(), dout.data(), N);
  cu::gelu_backward_set(d_set, d_x, d_dout, N);
  close("gelu bwd set", d_set.download(), dset, kF32);
}

TEST_CASE("attention forward and backward (and with attention dropout: the CPU's mask)") {
  const uint64_t key = 0x1234abcd;
  // The last shape's 4 heads as heads 8-11 of a 16-head model (a tensor-parallel rank's).
  for (const auto& [s, heads] :
       {std::pair{Shape{2, 37, 96, 4}, gpt::HeadRange{}},
        std::pair{Shape{2, 128, 768, 12}, gpt::HeadRange{}},
        std::pair{Shape{1, 100, 256, 2}, gpt::HeadRange{}},
        std::pair{Shape{2, 64, 256, 4}, gpt::HeadRange{16, 8}}})
    for (const float p : {0.0f, 0.1f, 0.5f}) {
      CAPTURE(s.T);
      CAPTURE(p);
      CAPTURE(heads.first);
      const int B = s.B, T = s.T, C = s.C, NH = s.NH;
      auto qkv = randn(size_t(B) * T * 3 * C, 40);
      std::vector<float> out(size_t(B) * T * C), att(size_t(B) * NH * T * T);
      cpu::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, p, key, heads);
      Dev<float> d_qkv(qkv), d_out(out.size()), d_att(att.size());
      cu::attention_forward(d_out, d_att, d_qkv, B, T, C, NH, p, key, heads);
      close("attention fwd out", d_out.download(), out, kF32);
      close("attention fwd att", d_att.download(), att, kF32);  // before dropout

      auto dout = randn(out.size(), 41), dqkv = randn(qkv.size(), 42);
      Dev<float> d_dout(dout), d_dqkv(dqkv);
      d_att.upload(att);  // backward from the CPU's probabilities
      cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH, p,
                              key, heads);
      cu::attention_backward(d_dqkv, d_dout, d_qkv, d_att, B, T, C, NH, p, key, heads);
      close("attention bwd dqkv", d_dqkv.download(), dqkv, kF32);
    }
}

TEST_CASE("hidden dropout, alone and fused with the residual add or the bf16 copy: the CPU's bits") {
  const size_t n = 300001;  // odd: a partial last block
  const float p = 0.1f;
  const uint64_t key = gpt::dropout_site_key(gpt::dropout_step_key(3, 4, 1), 5);
  auto x = randn(n, 60), residual = randn(n, 61);
  std::vector<float> dropped = x, sum(n);
  cpu::dropout_forward(dropped.data(), n, p, key);
  cpu::residual_forward(sum.data(), dropped.data(), residual.data(), int(n));
  Dev<float> d_x(x), d_residual(residual), d_out(n);
  cu::dropout_forward(d_x, n, p, key);
  CHECK(same_bits(d_x.download(), dropped));
  d_x.upload(x);
  cu::dropout_residual_forward(d_out, d_x, d_residual, n, p, key);
  CHECK(same_bits(d_out.download(), sum));
  cu::dropout_residual_forward(d_x, d_x, d_residual, n, p, key);  // in place, as the backend
  CHECK(same_bits(d_x.download(), sum));
  // backward: the masked gradient, and its bf16 copy as to_bf16 rounds it
  std::vector<float> dinp(n);
  cpu::dropout_backward(dinp.data(), x.data(), n, p, key);
  Dev<float> d_dout(x), d_dinp(n);
  Dev<cu::bf16> d_dinp_h(n), d_rounded(n);
  cu::dropout_backward_bf16(d_dinp, d_dinp_h, d_dout, n, p, key);
  CHECK(same_bits(d_dinp.download(), dinp));
  cu::to_bf16(d_rounded, d_dinp, n);
  CHECK(same_bits(to_float(d_dinp_h.download()), to_float(d_rounded.download())));
}

TEST_CASE("fused classifier: losses, gradient in place and out of place, padded columns") {
  for (int V : {101, 50257}) {
    const int B = 2, T = V > 1000 ? 8 : 33, Vp = (V + 127) / 128 * 128, N = B * T;
    auto logits = randn(size_t(N) * Vp, 50, 4.0f);
    auto targets = randint(N, V, 51);
    const float dloss = 1.0f / N;
    std::vector<float> losses(N), dlogits(logits.size());
    cpu::fused_classifier(dlogits.data(), losses.data(), logits.data(), targets.data(), dloss, B, T,
                          V, Vp);
    Dev<float> d_logits(logits), d_losses(N), d_dlogits(logits.size());
    Dev<int> d_targets(targets);
    cu::fused_classifier(d_dlogits, d_losses, d_logits, d_targets, dloss, B, T, V, Vp);
    close("classifier losses", d_losses.download(), losses, kF32);
    auto g = d_dlogits.download();
    close("classifier dlogits", g, dlogits, kF32);
    bool pad_zero = true;
    for (int r = 0; r < N; ++r)
      for (int i = V; i < Vp; ++i) pad_zero &= g[size_t(r) * Vp + i] == 0.0f;
    CHECK(pad_zero);
    // in place, like the backend
    d_losses.poison();
    cu::fused_classifier(d_logits, d_losses, d_logits, d_targets, dloss, B, T, V, Vp);
    close("classifier losses (in place)", d_losses.download(), losses, kF32);
    close("classifier dlogits (in place)", d_logits.download(), dlogits, kF32);
    // losses only
    d_logits.upload(logits);
    d_losses.poison();
    cu::fused_classifier(nullptr, d_losses, d_logits, d_targets, 0.0f, B, T, V, Vp);
    close("classifier losses (no grad)", d_losses.download(), losses, kF32);
    CHECK(same_bits(d_logits.download(), logits));
    // device mean of the losses
    Dev<float> d_mean(1);
    cu::mean_to_device(d_mean, d_losses, N);
    double sum = 0;
    for (float l : losses) sum += l;
    close("loss mean", d_mean.download(), {float(sum / N)}, kF32);
  }
}

TEST_CASE("residual, scale, bf16 conversion") {
  const int N = 70001;
  auto a = randn(N, 60), b = randn(N, 61), dout = randn(N, 62), da = randn(N, 63),
       db = randn(N, 64);
  std::vector<float> out(N);
  cpu::residual_forward(out.data(), a.data(), b.data(), N);
  Dev<float> d_a(a), d_b(b), d_out(N), d_dout(dout), d_da(da), d_db(db);
  cu::residual_forward(d_out, d_a, d_b, N);
  CHECK(same_bits(d_out.download(), out));
  cu::residual_forward(d_a, d_a, d_b, N);  // in place, as the backend uses it
  CHECK(same_bits(d_a.download(), out));
  cpu::residual_backward(da.data(), db.data(), dout.data(), N);
  cu::residual_backward(d_da, d_db, d_dout, N);
  CHECK(same_bits(d_da.download(), da));
  CHECK(same_bits(d_db.download(), db));
  cpu::scale_inplace(b.data(), N, 0.37f);
  cu::scale_inplace(d_b, N, 0.37f);
  CHECK(same_bits(d_b.download(), b));

  Dev<cu::bf16> h(N);
  Dev<float> back(N);
  cu::to_bf16(h, d_dout, N);
  cu::to_fp32(back, h, N);
  auto r = back.download();
  bool ok = true;
  for (int i = 0; i < N; ++i) ok &= std::fabs(r[i] - dout[i]) <= std::fabs(dout[i]) * (1.0f / 256);
  CHECK(ok);  // round to nearest: relative error at most 2^-9 (checked at 2^-8)
  CHECK(!same_bits(r, dout));  // and it did round
}

TEST_CASE("dropout: the CUDA mask and scale are bit-identical to the CPU's") {
  const int N = 300007;  // beyond one grid-stride pass of small grids, odd length
  auto x = randn(N, 70), dout = randn(N, 71);
  Dev<float> d_x(x), d_dout(dout), d_dinp(N);
  cpu::dropout_forward(x.data(), N, 0.1f, 12345);
  cu::dropout_forward(d_x, N, 0.1f, 12345);
  CHECK(same_bits(d_x.download(), x));
  std::vector<float> dinp(N);
  cpu::dropout_backward(dinp.data(), dout.data(), N, 0.25f, 99);
  cu::dropout_backward(d_dinp, d_dout, N, 0.25f, 99);
  CHECK(same_bits(d_dinp.download(), dinp));
}

TEST_CASE("hidden dropout on a sequence-parallel shard: the whole tensor's mask at its offset") {
  // A rank's rows start at row0·C of the stream; C odd puts shards at offsets that are not
  // multiples of the mask word's four elements.
  const int C = 771, rows = 397;
  const uint64_t key = gpt::dropout_site_key(gpt::dropout_step_key(9, 2, 0), 3);
  auto x = randn(size_t(2) * rows * C, 72), residual = randn(size_t(rows) * C, 73);
  std::vector<float> whole = x;
  cpu::dropout_forward(whole.data(), whole.size(), 0.1f, key);
  for (const size_t row0 : {size_t(0), size_t(1), size_t(rows), size_t(rows) - 3}) {
    CAPTURE(row0);
    const size_t first = row0 * C, n = size_t(rows) * C;
    const std::vector<float> shard(x.begin() + first, x.begin() + first + n);
    const std::vector<float> want(whole.begin() + first, whole.begin() + first + n);
    Dev<float> d_x(shard), d_out(n), d_residual(residual);
    cu::dropout_forward(d_x, n, 0.1f, key, first);
    CHECK(same_bits(d_x.download(), want));
    std::vector<float> sum(n);
    cpu::residual_forward(sum.data(), want.data(), residual.data(), int(n));
    d_x.upload(shard);
    cu::dropout_residual_forward(d_out, d_x, d_residual, n, 0.1f, key, first);
    CHECK(same_bits(d_out.download(), sum));
    std::vector<float> dinp(n);
    cpu::dropout_backward(dinp.data(), shard.data(), n, 0.1f, key, first);
    CHECK(same_bits(dinp, want));  // the CPU's shard offset is the same mask
    Dev<cu::bf16> d_dinp_h(n);
    cu::dropout_backward_bf16(d_out, d_dinp_h, d_x, n, 0.1f, key, first);
    CHECK(same_bits(d_out.download(), want));
  }
}

TEST_CASE("fp16 conversion rounds to nearest and overflows to inf beyond 65504") {
  std::vector<float> v = {1.0f, 65504.0f, 70000.0f, -1e6f, 1e-3f};
  Dev<float> d(v);
  Dev<cu::fp16> h(v.size());
  cu::to_fp16(h, d, v.size());
  std::vector<uint16_t> bits(v.size());  // the raw fp16 bits
  GPT_CUDA_CHECK(cudaStreamSynchronize(gpt::cuda::stream()));
  GPT_CUDA_CHECK(cudaMemcpy(bits.data(), h.get(), v.size() * 2, cudaMemcpyDeviceToHost));
  CHECK(bits[0] == 0x3C00);  // 1.0
  CHECK(bits[1] == 0x7BFF);  // 65504, the largest finite
  CHECK(bits[2] == 0x7C00);  // +inf
  CHECK(bits[3] == 0xFC00);  // -inf
  CHECK(bits[4] == 0x1419);  // 0.0010004 (nearest to 1e-3)
}

TEST_CASE("adamw update matches the CPU over three steps") {
  const size_t n = 300007;
  auto p = randn(n, 70), g = randn(n, 71, 1e-2f), m = randn(n, 72, 1e-3f), v = randn(n, 73, 1e-3f);
  for (auto& x : v) x = x * x;  // second moments are non-negative
  Dev<float> d_p(p), d_g(g), d_m(m), d_v(v);
  for (int step = 1; step <= 3; ++step) {
    cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), n, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
                      step, 0.7f);
    cu::adamw_update(d_p, d_g, d_m, d_v, n, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step, 0.7f);
  }
  close("adamw params", d_p.download(), p, kF32);
  close("adamw m", d_m.download(), m, kF32);
  close("adamw v", d_v.download(), v, kF32);
}

TEST_CASE("adamw in one launch over spans gives the bits of one launch per tensor") {
  // Three tensors: one decaying across several spans, one not decaying, a short one decaying.
  const std::vector<std::pair<size_t, size_t>> tensors = {{0, 200001}, {200001, 200769}, {200769, 200800}};
  const std::vector<bool> decays = {true, false, true};
  const size_t n = 200800;
  const auto spans = cu::adamw_spans(tensors, decays);
  CHECK(spans.size() == 6);  // 4 spans of at most 65536, then one each
  auto p = randn(n, 80), g = randn(n, 81, 1e-2f);
  Dev<float> a_p(p), a_g(g), a_m(std::vector<float>(n, 0.f)), a_v(std::vector<float>(n, 0.f));
  Dev<float> b_p(p), b_g(g), b_m(std::vector<float>(n, 0.f)), b_v(std::vector<float>(n, 0.f));
  Dev<cu::AdamWSpan> d_spans(spans);
  Dev<cu::bf16> a_h(n);  // the bf16 copy, written by the 16-byte and the element paths alike
  for (int step = 1; step <= 2; ++step) {
    cu::adamw_update_spans(a_p, a_g, a_m, a_v, d_spans, int(spans.size()), 1e-3f, 0.9f, 0.95f,
                           1e-8f, 0.1f, step, 0.5f, a_h);
    for (size_t t = 0; t < tensors.size(); ++t) {
      const size_t o = tensors[t].first, len = tensors[t].second - o;
      cu::adamw_update(b_p + o, b_g + o, b_m + o, b_v + o, len, 1e-3f, 0.9f, 0.95f, 1e-8f,
                       decays[t] ? 0.1f : 0.0f, step, 0.5f);
    }
  }
  CHECK(same_bits(a_p.download(), b_p.download()));
  CHECK(same_bits(a_m.download(), b_m.download()));
  CHECK(same_bits(a_v.download(), b_v.download()));
  CHECK(same_bits(to_float(a_h.download()), to_float(to_bf16(b_p.download()))));
}

namespace {
// Gradients cut into AdamW spans, in fp32 and with some tensors packed in bf16 (AdamWSpan::
// grad_bf16): tensors of odd starts and lengths, one over several spans; the packed ones start on
// a multiple of 4, one of them with a length that is not.
struct PackedGrads {
  std::vector<std::pair<size_t, size_t>> tensors = {
      {0, 200001}, {200001, 200769}, {200769, 200800}, {200800, 270803}, {270803, 270900},
      {270900, 271924}};
  std::vector<std::pair<size_t, size_t>> packed = {{200800, 270803}, {270900, 271924}};
  size_t n = 271924;
  std::vector<cu::AdamWSpan> spans = cu::adamw_spans(tensors, {true, false, true, true, false, true});
  std::vector<float> fp32;    // the gradient, bf16-exact in the packed tensors
  std::vector<float> buffer;  // the same, packed: bf16 in each packed tensor's first half

  explicit PackedGrads(uint32_t seed) : fp32(randn(n, seed, 1e-2f)) {
    buffer = fp32;
    for (const auto& [begin, end] : packed) {
      const std::vector<float> part(fp32.begin() + begin, fp32.begin() + end);
      const auto h = to_bf16(part);
      const auto exact = to_float(h);
      std::copy(exact.begin(), exact.end(), fp32.begin() + begin);
      std::fill(buffer.begin() + begin, buffer.begin() + end, NAN);  // the unused half: NaN
      std::memcpy(buffer.data() + begin, h.data(), h.size() * sizeof(h[0]));
    }
  }
};
}  // namespace

TEST_CASE("sum_squares_spans: CPU value, deterministic; packed bf16 gradients add the same bits") {
  const PackedGrads g(60);
  Dev<float> d_fp32(g.fp32), d_buffer(g.buffer);
  Dev<cu::AdamWSpan> d_spans(g.spans), d_packed(cu::with_bf16_grads(g.spans, g.packed));
  const int n_spans = int(g.spans.size());
  const double want = cpu::sum_squares(g.fp32.data(), g.n);
  const double got = cu::sum_squares_spans(d_fp32, d_spans, n_spans);
  CHECK(got == doctest::Approx(want).epsilon(1e-12));
  CHECK(cu::sum_squares_spans(d_fp32, d_spans, n_spans) == got);  // bitwise the same again
  CHECK(cu::sum_squares_spans(d_buffer, d_packed, n_spans) == got);
  // One element: the single span's element path.
  Dev<float> one(std::vector<float>{3.0f});
  Dev<cu::AdamWSpan> one_span(cu::adamw_spans({{0, 1}}, {false}));
  CHECK(cu::sum_squares_spans(one, one_span, 1) == 9.0);
}

TEST_CASE("adamw over spans with packed bf16 gradients gives the bits of their fp32 values") {
  const PackedGrads g(61);
  const size_t n = g.n;
  auto p = randn(n, 62);
  Dev<float> a_p(p), a_g(g.buffer), a_m(std::vector<float>(n, 0.f)), a_v(std::vector<float>(n, 0.f));
  Dev<float> b_p(p), b_g(g.fp32), b_m(std::vector<float>(n, 0.f)), b_v(std::vector<float>(n, 0.f));
  Dev<cu::AdamWSpan> d_spans(g.spans), d_packed(cu::with_bf16_grads(g.spans, g.packed));
  Dev<cu::bf16> a_h(n), b_h(n);
  for (int step = 1; step <= 2; ++step) {
    cu::adamw_update_spans(a_p, a_g, a_m, a_v, d_packed, int(g.spans.size()), 1e-3f, 0.9f, 0.95f,
                           1e-8f, 0.1f, step, 0.5f, a_h);
    cu::adamw_update_spans(b_p, b_g, b_m, b_v, d_spans, int(g.spans.size()), 1e-3f, 0.9f, 0.95f,
                           1e-8f, 0.1f, step, 0.5f, b_h);
  }
  CHECK(same_bits(a_p.download(), b_p.download()));
  CHECK(same_bits(a_m.download(), b_m.download()));
  CHECK(same_bits(a_v.download(), b_v.download()));
  CHECK(same_bits(to_float(a_h.download()), to_float(b_h.download())));
}

TEST_CASE("adamw over spans with split masters: the bits of fp32 masters, ties nudged") {
  // Split: a tensor over several spans (16-byte path), one with an odd start and length (element
  // path), one whose packed low halves start off a multiple of 4 (element path too); the others
  // stay fp32. The packed bf16 gradients go with them as the backend has them.
  const PackedGrads g(63);
  const size_t n = g.n;
  const std::vector<std::pair<size_t, size_t>> split = {
      {0, 200001}, {200769, 200800}, {200800, 270803}};
  auto p = randn(n, 64);
  for (float& x : p) {  // no start value a split would nudge: both runs start from the same
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x1FFFFu) == 0x18000u) u ^= 1u;
    std::memcpy(&x, &u, 4);
  }
  std::vector<cu::bf16> h0(n);
  std::vector<uint16_t> lo0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &p[i], 4);
    const gpt::MasterHalves mh = gpt::split_master_bits(u);
    std::memcpy(static_cast<void*>(&h0[i]), &mh.hi, 2);
    for (const auto& [b, e] : split)
      if (i >= b && i < e) lo0.push_back(mh.lo);
  }
  const std::vector<float> nan(n, NAN);
  Dev<float> a_p(nan), a_g(g.buffer), a_m(std::vector<float>(n, 0.f)), a_v(std::vector<float>(n, 0.f));
  Dev<float> b_p(p), b_g(g.buffer), b_m(std::vector<float>(n, 0.f)), b_v(std::vector<float>(n, 0.f));
  // The fp32 tensors' masters in a_p, the split ones only in the halves.
  {
    std::vector<float> fp32 = nan;
    size_t at = 0;
    for (const auto& [b, e] : split) {
      std::copy(p.begin() + at, p.begin() + b, fp32.begin() + at);
      at = e;
    }
    std::copy(p.begin() + at, p.end(), fp32.begin() + at);
    a_p.upload(fp32);
  }
  Dev<cu::bf16> a_h(h0), b_h(n);
  Dev<uint16_t> a_lo(lo0);
  const auto packed = cu::with_bf16_grads(g.spans, g.packed);
  Dev<cu::AdamWSpan> d_split(cu::with_split_master(packed, split, cu::packed_lo_shifts(split))),
      d_plain(packed);
  const int n_spans = int(g.spans.size());
  cu::adamw_update_spans(a_p, a_g, a_m, a_v, d_split, n_spans, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1,
                         0.5f, a_h, nullptr, nullptr, a_lo);
  cu::adamw_update_spans(b_p, b_g, b_m, b_v, d_plain, n_spans, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1,
                         0.5f, b_h);
  // Joined, the halves are the fp32 update's masters but one fp32 unit where a tie that rounds up
  // was nudged; the bf16 copies, moments and unsplit tensors are the same bits.
  const auto hi = a_h.download(), want_h = b_h.download();
  const auto lo = a_lo.download();
  const auto want = b_p.download(), fp32 = a_p.download();
  CHECK(std::memcmp(hi.data(), want_h.data(), n * 2) == 0);
  CHECK(same_bits(a_m.download(), b_m.download()));
  CHECK(same_bits(a_v.download(), b_v.download()));
  size_t k = 0, nudged = 0, wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    bool in_split = false;
    for (const auto& [b, e] : split) in_split |= i >= b && i < e;
    uint32_t w, got;
    std::memcpy(&w, &want[i], 4);
    if (!in_split) {
      std::memcpy(&got, &fp32[i], 4);
      wrong += got != w;
      continue;
    }
    uint16_t hb;
    std::memcpy(&hb, &hi[i], 2);
    got = gpt::join_master_bits(hb, lo[k++]);
    if (got == w + 1 && (w & 0x1FFFFu) == 0x18000u)
      ++nudged;
    else
      wrong += got != w;
  }
  CHECK(k == lo0.size());
  CHECK(wrong == 0);
  MESSAGE("split masters: " << nudged << " ties nudged");
}

TEST_CASE("backward kernels are bitwise deterministic run to run") {
  const int B = 4, T = 64, C = 768, NH = 12, OC = 3072, V = 300;
  const int N = B * T;
  auto inp = randn(size_t(N) * C, 90), w = randn(size_t(OC) * C, 91, 0.05f),
       dout = randn(size_t(N) * OC, 92), qkv = randn(size_t(N) * 3 * C, 93),
       datty = randn(size_t(N) * C, 94);
  auto tokens = randint(N, V, 95);
  auto run = [&] {
    Dev<float> d_inp(inp), d_w(w), d_dout(dout), d_qkv(qkv), d_datty(datty);
    Dev<int> d_tok(tokens);
    std::vector<float> zero_in(inp.size(), 0.0f), zero_w(w.size(), 0.0f), zero_oc(OC, 0.0f),
        zero_c(C, 0.0f), zero_qkv(qkv.size(), 0.0f), zero_wte(size_t(V) * C, 0.0f),
        zero_wpe(size_t(T) * C, 0.0f);
    Dev<float> dinp(zero_in), dw(zero_w), db(zero_oc), dlw(zero_c), dlb(zero_c),
        dqkv(zero_qkv), att(size_t(B) * NH * T * T), out(size_t(N) * C), mean(N), rstd(N),
        dwte(zero_wte), dwpe(zero_wpe);
    cu::matmul_backward(dinp, dw, db, d_dout, d_inp, d_w, B, T, C, OC);
    cu::layernorm_forward(out, mean, rstd, d_inp, d_w, d_w, B, T, C);
    cu::layernorm_backward(dinp, dlw, dlb, d_datty, d_inp, d_w, mean, rstd, B, T, C);
    cu::attention_forward(out, att, d_qkv, B, T, C, NH);
    cu::attention_backward(dqkv, d_datty, d_qkv, att, B, T, C, NH);
    cu::encoder_backward(dwte, dwpe, d_datty, d_tok, B, T, C);
    std::vector<std::vector<float>> r = {dinp.download(), dw.download(), db.download(),
                                         dlw.download(), dlb.download(), dqkv.download(),
                                         dwte.download(), dwpe.download()};
    return r;
  };
  const auto a = run(), b = run();
  for (size_t i = 0; i < a.size(); ++i) CHECK_MESSAGE(same_bits(a[i], b[i]), "output " << i);
}
