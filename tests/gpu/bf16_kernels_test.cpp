// The kernels of the --bf16 path (bf16 activations and matmul gradients end to end) against the
// fp32 CPU reference (kernels/ops.h) computed from the unrounded inputs, within kBF16.
// Written outputs start poisoned (NaN), so an element a kernel forgets fails.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/ops.h"
#include "tests/gpu/gpu_test_util.h"

using namespace gputest;
namespace cpu = gpt::cpu;
namespace cu = gpt::cuda;

namespace {
struct MM {
  int N, C, OC;
};
// Odd sizes, a GPT-2 QKV shape, and a shape whose OC is not a multiple of 8.
const MM kMatmuls[] = {{111, 96, 160}, {128, 768, 2304}, {50, 64, 1000}, {37, 40, 13}};

// layernorm_forward_residual_bf16 of inp + drop(branch) (branch bf16-exact): the fp32 sum it
// stores is `sum` bit for bit, and its output, mean and rstd (left in mean and rstd) have the bits
// of layernorm_forward_bf16 over that sum.
void check_residual_layernorm(const std::vector<float>& inp, const std::vector<float>& branch,
                              const std::vector<float>& sum, const float* w, const float* b,
                              const Dev<float>& mean, const Dev<float>& rstd, int B, int T, int C,
                              const gpt::HiddenDropout& drop = {}) {
  const int N = B * T;
  Dev<float> d_inp(inp), d_sum(sum.size()), d_mean2(N), d_rstd2(N);
  Dev<cu::bf16> d_branch(to_bf16(branch)), d_out(sum.size()), d_out2(sum.size());
  cu::layernorm_forward_residual_bf16(d_out, mean, rstd, d_sum, d_inp, d_branch, w, b, B, T, C,
                                      drop);
  const auto got_sum = d_sum.download();
  CHECK(same_bits(got_sum, sum));
  Dev<float> d_sum_in(got_sum);
  cu::layernorm_forward_bf16(d_out2, d_mean2, d_rstd2, d_sum_in, w, b, B, T, C);
  CHECK(same_bits(to_float(d_out.download()), to_float(d_out2.download())));
  CHECK(same_bits(mean.download(), d_mean2.download()));
  CHECK(same_bits(rstd.download(), d_rstd2.download()));
}
}  // namespace

TEST_CASE("bf16 matmul: bf16 output with bias, fp32 output with the residual fused") {
  for (const MM s : kMatmuls) {
    const int N = s.N, C = s.C, OC = s.OC;
    auto inp = randn(size_t(N) * C, 200), w = randn(size_t(OC) * C, 201, 0.05f);
    auto bias = randn(OC, 202), residual = randn(size_t(N) * OC, 203);
    Dev<cu::bf16> h_inp(to_bf16(inp)), h_w(to_bf16(w)), h_bias(to_bf16(bias));
    for (bool with_bias : {true, false}) {
      std::vector<float> out(size_t(N) * OC);
      cpu::matmul_forward(out.data(), inp.data(), w.data(), with_bias ? bias.data() : nullptr, 1,
                          N, C, OC);
      Dev<cu::bf16> d_out(out.size());
      cu::matmul_forward_bf16_out(d_out, h_inp, h_w, with_bias ? h_bias.get() : nullptr, N, C, OC);
      close("matmul bf16 out", to_float(d_out.download()), out, kBF16);

      // The MLP's first layer: GELU in the epilogue (OC % 8 == 0), else matmul then GELU.
      std::vector<float> act(out.size());
      cpu::gelu_forward(act.data(), out.data(), int(out.size()));
      Dev<cu::bf16> d_act(out.size()), d_pre(out.size());
      cu::matmul_forward_bf16_gelu(d_act, d_pre, h_inp, h_w, with_bias ? h_bias.get() : nullptr,
                                   N, C, OC);
      close("matmul bf16 gelu: pre-activation", to_float(d_pre.download()), out, kBF16);
      close("matmul bf16 gelu: activation", to_float(d_act.download()), act, kBF16);

      for (size_t i = 0; i < out.size(); ++i) out[i] += residual[i];
      Dev<float> d_res(residual), d_bias(bias), d_sum(out.size());
      cu::matmul_forward_bf16_residual(d_sum, d_res, h_inp, h_w, with_bias ? d_bias.get() : nullptr,
                                       N, C, OC);
      close("matmul bf16 + residual", d_sum.download(), out, kBF16);
    }
  }
}

TEST_CASE("bf16 matmul backward from a bf16 dout: dinp in fp32 or bf16, dweight +=, bias sums") {
  for (const MM s : kMatmuls) {
    const int N = s.N, C = s.C, OC = s.OC;
    auto inp = randn(size_t(N) * C, 210), w = randn(size_t(OC) * C, 211, 0.05f);
    auto dout = rounded(randn(size_t(N) * OC, 212));  // the bf16 gradient the kernels get
    std::vector<float> dinp(inp.size(), 0.0f), dw(w.size(), 0.0f), db(OC, 0.0f);
    cpu::matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), 1, N,
                         C, OC);
    Dev<cu::bf16> h_inp(to_bf16(inp)), h_w(to_bf16(w)), h_dout(to_bf16(dout));
    Dev<float> d_dinp(dinp.size());
    Dev<cu::bf16> d_dinp_h(dinp.size());
    cu::matmul_backward_bf16_dinp(d_dinp, nullptr, h_dout, h_w, N, C, OC);
    cu::matmul_backward_bf16_dinp(nullptr, d_dinp_h, h_dout, h_w, N, C, OC);
    close("matmul bwd dinp (fp32 out)", d_dinp.download(), dinp, kBF16);
    close("matmul bwd dinp (bf16 out)", to_float(d_dinp_h.download()), dinp, kBF16);
    // dweight adds: twice from zero is twice the gradient.
    Dev<float> d_dw(std::vector<float>(dw.size(), 0.0f));
    cu::matmul_backward_bf16_dweight(d_dw, h_dout, h_inp, N, C, OC);
    close("matmul bwd dweight", d_dw.download(), dw, kBF16);
    cu::matmul_backward_bf16_dweight(d_dw, h_dout, h_inp, N, C, OC);
    for (float& x : dw) x *= 2;
    close("matmul bwd dweight, added twice", d_dw.download(), dw, kBF16);
    // Written in bf16 (the packed weight gradients): the fp32 result within its rounding (cuBLASLt
    // may pick another algorithm for a bf16 output, so not necessarily its rounding to the bit).
    Dev<float> d_dw1(dw.size());
    cu::matmul_backward_bf16_dweight(d_dw1, h_dout, h_inp, N, C, OC, /*accumulate=*/false);
    Dev<cu::bf16> d_dw_h(dw.size());  // poisoned: every element must be written
    cu::matmul_backward_bf16_dweight(d_dw_h, h_dout, h_inp, N, C, OC);
    close("matmul bwd dweight (bf16 out)", to_float(d_dw_h.download()), d_dw1.download(), 1.0 / 256,
          1e-5);
    // Bias sums add to what is there, from fp32 or bf16 gradients.
    auto db0 = randn(OC, 213);
    std::vector<float> want(OC);
    for (int o = 0; o < OC; ++o) want[o] = db0[o] + db[o];
    Dev<float> d_db32(db0), d_db16(db0), d_dout32(dout);
    cu::bias_grad(d_db32, d_dout32.get(), N, OC);
    cu::bias_grad(d_db16, h_dout.get(), N, OC);
    close("bias grad from fp32", d_db32.download(), want, kF32);
    close("bias grad from bf16", d_db16.download(), want, kF32);  // same values (dout is rounded)
  }
}

TEST_CASE("column-sum finishes queued in a ColumnSumBatch: none before the flush, same bits after") {
  // Bias sums (one quantity) of two widths and a LayerNorm backward (three: weight, bias and the
  // column sums of dinp) in one batch, against the same calls run at once.
  const int B = 2, T = 150, N = B * T, C = 768;
  auto dout_a = rounded(randn(size_t(N) * 264, 260));
  auto dout_b = rounded(randn(size_t(N) * 1000, 261));
  auto inp = randn(size_t(N) * C, 262, 2.0f), w = randn(C, 263), b = randn(C, 264);
  auto dy = rounded(randn(size_t(N) * C, 265));
  std::vector<float> out(inp.size()), mean(N), rstd(N);
  cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), B,
                         T, C);
  Dev<cu::bf16> h_a(to_bf16(dout_a)), h_b(to_bf16(dout_b)), h_dy(to_bf16(dy));
  Dev<float> d_inp(inp), d_w(w), d_mean(mean), d_rstd(rstd);
  auto db_a0 = randn(264, 266), db_b0 = randn(1000, 267), zeros = std::vector<float>(C, 0.0f);
  struct Out {
    Dev<float> a, b, dinp, dw, dbias, colsum;
  };
  auto make = [&] {
    return Out{Dev<float>(db_a0), Dev<float>(db_b0), Dev<float>(std::vector<float>(inp.size())),
               Dev<float>(zeros), Dev<float>(zeros), Dev<float>(zeros)};
  };
  auto run = [&](Out& o) {
    cu::bias_grad(o.a, h_a.get(), N, 264);
    cu::layernorm_backward(o.dinp, o.dw, o.dbias, h_dy.get(), d_inp, d_w, d_mean, d_rstd, B, T, C,
                           nullptr, o.colsum);
    cu::bias_grad(o.b, h_b.get(), N, 1000);
  };
  Out now = make(), later = make();
  run(now);
  {
    cu::ColumnSumBatch batch;
    run(later);
    CHECK(same_bits(later.a.download(), db_a0));  // queued, not yet added
    CHECK(same_bits(later.dw.download(), zeros));
    batch.flush();
  }
  CHECK(same_bits(later.a.download(), now.a.download()));
  CHECK(same_bits(later.b.download(), now.b.download()));
  CHECK(same_bits(later.dw.download(), now.dw.download()));
  CHECK(same_bits(later.dbias.download(), now.dbias.download()));
  CHECK(same_bits(later.colsum.download(), now.colsum.download()));
  CHECK(same_bits(later.dinp.download(), now.dinp.download()));
}

TEST_CASE("bf16 layernorm: bf16 output; the backward's bf16 copy and column sums of dinp") {
  // The 16-byte forward and the fused row-chunk backward take C % 4 == 0 up to 4096 (96 leaves
  // threads with no column group, 456 threads with one of their two; 1600, 2304 and 4096 run
  // more than 4 warps a row; 111 rows end in a partial chunk); the warp-pair backward takes other
  // widths up to 1024 (200); 1602 and 4100 take the scalar forward and the two-pass backward.
  for (const int C : {96, 200, 456, 768, 1024, 1600, 2304, 4096, 1602, 4100}) {
    CAPTURE(C);
    const int B = 3, T = 37, N = B * T;
    auto inp = randn(size_t(N) * C, 220, 2.0f), w = randn(C, 221), b = randn(C, 222);
    std::vector<float> out(inp.size()), mean(N), rstd(N);
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), B,
                           T, C);
    Dev<float> d_inp(inp), d_w(w), d_b(b), d_mean(N), d_rstd(N);
    Dev<cu::bf16> d_out(out.size());
    cu::layernorm_forward_bf16(d_out, d_mean, d_rstd, d_inp, d_w, d_b, B, T, C);
    close("ln bf16 out", to_float(d_out.download()), out, kBF16);
    close("ln bf16 mean", d_mean.download(), mean, kF32);
    close("ln bf16 rstd", d_rstd.download(), rstd, kF32);
    {
      // With the residual add of a bf16 branch: the fp32 sum is stored exactly and normalised
      // with the bits of the plain LayerNorm of that sum.
      const auto branch = rounded(randn(inp.size(), 226));
      std::vector<float> sum(inp.size());
      for (size_t i = 0; i < sum.size(); ++i) sum[i] = inp[i] + branch[i];
      Dev<float> d_mean2(N), d_rstd2(N);
      check_residual_layernorm(inp, branch, sum, d_w, d_b, d_mean2, d_rstd2, B, T, C);
    }

    auto dout = randn(inp.size(), 223), dinp0 = randn(inp.size(), 224), sum0 = randn(C, 225);
    auto dinp_ref = dinp0;
    std::vector<float> dw(C, 0.f), db(C, 0.f);
    cpu::layernorm_backward(dinp_ref.data(), dw.data(), db.data(), dout.data(), inp.data(),
                            w.data(), mean.data(), rstd.data(), B, T, C);
    Dev<float> d_dout(dout), d_dinp(dinp0), d_dw(std::vector<float>(C, 0.f)),
        d_db(std::vector<float>(C, 0.f)), d_sum(sum0);
    Dev<cu::bf16> d_copy(inp.size());
    d_mean.upload(mean);
    d_rstd.upload(rstd);
    cu::layernorm_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, d_mean, d_rstd, B, T, C, d_copy,
                           d_sum);
    const auto dinp = d_dinp.download();
    close("ln bwd dinp", dinp, dinp_ref, kF32);
    close("ln bwd dweight", d_dw.download(), dw, kF32);
    close("ln bwd dbias", d_db.download(), db, kF32);
    CHECK(same_bits(to_float(d_copy.download()), rounded(dinp)));
    std::vector<float> sum = sum0;
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < C; ++c) sum[c] += dinp_ref[size_t(r) * C + c];
    close("ln bwd column sums of dinp (added)", d_sum.download(), sum, kF32);

    // From a bf16 dout (the backend's dln), without the copy and the column sums.
    const auto dout16 = rounded(dout);
    auto dinp16_ref = dinp0;
    std::vector<float> dw16(C, 0.f), db16(C, 0.f);
    cpu::layernorm_backward(dinp16_ref.data(), dw16.data(), db16.data(), dout16.data(),
                            inp.data(), w.data(), mean.data(), rstd.data(), B, T, C);
    Dev<cu::bf16> d_dout16(to_bf16(dout16));
    Dev<float> d_dinp16(dinp0), d_dw16(std::vector<float>(C, 0.f)),
        d_db16(std::vector<float>(C, 0.f));
    cu::layernorm_backward(d_dinp16, d_dw16, d_db16, d_dout16.get(), d_inp, d_w, d_mean, d_rstd,
                           B, T, C);
    close("ln bwd (bf16 dout) dinp", d_dinp16.download(), dinp16_ref, kF32);
    close("ln bwd (bf16 dout) dweight", d_dw16.download(), dw16, kF32);
    close("ln bwd (bf16 dout) dbias", d_db16.download(), db16, kF32);
  }
}

TEST_CASE("bf16 layernorm with hidden dropout: the forward's add, the backward's copy and sums") {
  // The LayerNorm below a dropped branch applies its mask on the way: the forward adds
  // drop(branch) to the residual stream, the backward's bf16 copy and column sums are of
  // drop(dinp) (the branch's gradient) while dinp stays the stream's. Widths: the 16-byte kernels
  // (768, 2048), the warp-pair backward (200) and the scalar kernels (1602), which drop in passes
  // of their own.
  const float p = 0.1f;
  const uint64_t key = gpt::dropout_site_key(0x5eed, 3);
  const auto drop = gpt::HiddenDropout::at(p, key);
  for (const int C : {768, 2048, 200, 1602}) {
    CAPTURE(C);
    const int B = 2, T = 41, N = B * T;
    const size_t n = size_t(N) * C;
    auto inp = randn(n, 240, 2.0f), w = randn(C, 241), b = randn(C, 242);
    const auto branch = rounded(randn(n, 243));
    auto sum = branch;
    cpu::dropout_forward(sum.data(), n, p, key);
    size_t zeros = 0;
    for (size_t i = 0; i < n; ++i) zeros += sum[i] == 0.0f, sum[i] = inp[i] + sum[i];
    CHECK(zeros > n / 20);  // about a tenth dropped
    CHECK(zeros < n / 5);
    Dev<float> d_w(w), d_b(b), d_mean(N), d_rstd(N), d_sum_in(sum);
    check_residual_layernorm(inp, branch, sum, d_w, d_b, d_mean, d_rstd, B, T, C, drop);

    // The backward with and without the mask: the same dinp; the copy and sums of drop(dinp).
    const auto dout = rounded(randn(n, 244));
    const auto dinp0 = randn(n, 245), sum0 = randn(C, 246);
    Dev<cu::bf16> d_dout(to_bf16(dout)), d_copy(n), d_copy_plain(n);
    const std::vector<float> zero_c(C, 0.0f);
    Dev<float> d_dinp(dinp0), d_dinp_plain(dinp0), d_dw(zero_c), d_db(zero_c), d_dw2(zero_c),
        d_db2(zero_c), d_colsum(sum0), d_colsum_plain(sum0);
    cu::layernorm_backward(d_dinp, d_dw, d_db, d_dout.get(), d_sum_in, d_w, d_mean, d_rstd, B, T,
                           C, d_copy, d_colsum, drop);
    cu::layernorm_backward(d_dinp_plain, d_dw2, d_db2, d_dout.get(), d_sum_in, d_w, d_mean, d_rstd,
                           B, T, C, d_copy_plain, d_colsum_plain);
    const auto dinp = d_dinp.download();
    CHECK(same_bits(dinp, d_dinp_plain.download()));
    CHECK(same_bits(d_dw.download(), d_dw2.download()));
    CHECK(same_bits(d_db.download(), d_db2.download()));
    auto dropped = dinp;
    cpu::dropout_backward(dropped.data(), dinp.data(), n, p, key);
    CHECK(same_bits(to_float(d_copy.download()), rounded(dropped)));
    std::vector<double> want(sum0.begin(), sum0.end());
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < C; ++c) want[c] += dropped[size_t(r) * C + c];
    close("ln bwd column sums of drop(dinp)", d_colsum.download(),
          std::vector<float>(want.begin(), want.end()), kF32);
  }
}

TEST_CASE("bf16 gelu: forward, backward, and the backward's recomputed output") {
  const size_t N = 100003;  // not a multiple of the 8-element vector
  auto x = rounded(randn(N, 230, 3.0f)), dout = rounded(randn(N, 231));
  std::vector<float> out(N), dinp(N, 0.0f);
  cpu::gelu_forward(out.data(), x.data(), int(N));
  cpu::gelu_backward(dinp.data(), x.data(), dout.data(), int(N));
  Dev<cu::bf16> d_x(to_bf16(x)), d_dout(to_bf16(dout)), d_out(N), d_dinp(N), d_again(N);
  cu::gelu_forward_bf16(d_out, d_x.get(), N);
  const auto fwd = d_out.download();
  close("gelu bf16 fwd", to_float(fwd), out, kBF16);
  cu::gelu_backward_bf16(d_dinp, d_again, d_x, d_dout, N);
  close("gelu bf16 bwd", to_float(d_dinp.download()), dinp, kBF16);
  CHECK(same_bits(to_float(d_again.download()), to_float(fwd)));
  d_dinp.poison();
  cu::gelu_backward_bf16(d_dinp, nullptr, d_x, d_dout, N);  // no recompute: dinp alone
  close("gelu bf16 bwd (no recompute)", to_float(d_dinp.download()), dinp, kBF16);
}

TEST_CASE("bf16 gelu backward with the bias gradient: column sums of the rounded dinp added") {
  struct Shape {
    int N, F;
  };
  // Rows not a multiple of the 64-row chunk, columns not a multiple of the block's 256, the
  // GPT-2 MLP width, and F % 8 != 0 (the element-by-element path).
  for (const Shape s : {Shape{333, 200}, Shape{1000, 3072}, Shape{17, 12}}) {
    const int N = s.N, F = s.F;
    CAPTURE(N);
    CAPTURE(F);
    const size_t n = size_t(N) * F;
    auto x = rounded(randn(n, 260, 3.0f)), dout = rounded(randn(n, 261));
    const auto db0 = randn(F, 262);
    Dev<cu::bf16> d_x(to_bf16(x)), d_dout(to_bf16(dout));
    // The plain backward's bits.
    Dev<cu::bf16> d_dinp_ref(n), d_again_ref(n);
    cu::gelu_backward_bf16(d_dinp_ref, d_again_ref, d_x, d_dout, n);
    const auto dinp_ref = to_float(d_dinp_ref.download());
    const auto again_ref = to_float(d_again_ref.download());
    // dbias: the start plus the column sums of the rounded dinp, in double.
    std::vector<double> sum(F, 0.0);
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < F; ++c) sum[c] += dinp_ref[size_t(r) * F + c];
    std::vector<float> want(F);
    for (int c = 0; c < F; ++c) want[c] = float(double(db0[c]) + sum[c]);

    Dev<cu::bf16> d_dinp(n), d_again(n);
    Dev<float> d_db(db0);
    cu::gelu_backward_bf16_bias(d_dinp, d_again, d_x, d_dout, N, F, d_db);
    CHECK(same_bits(to_float(d_dinp.download()), dinp_ref));
    CHECK(same_bits(to_float(d_again.download()), again_ref));
    const auto db = d_db.download();
    close("gelu bf16 bwd dbias", db, want, kF32);
    // Deterministic: a second run (and one without the recomputed output) gives the same bits.
    d_dinp.poison();
    d_db.upload(db0);
    cu::gelu_backward_bf16_bias(d_dinp, nullptr, d_x, d_dout, N, F, d_db);
    CHECK(same_bits(to_float(d_dinp.download()), dinp_ref));
    CHECK(same_bits(d_db.download(), db));
    d_again.poison();
    d_db.upload(db0);
    cu::gelu_backward_bf16_bias(d_dinp, d_again, d_x, d_dout, N, F, d_db);
    CHECK(same_bits(to_float(d_again.download()), again_ref));
    CHECK(same_bits(d_db.download(), db));
  }
}

TEST_CASE("bf16 classifier: losses and dlogits in place, padded columns zero") {
  struct Case {
    int rows, V, Vp;
  };
  // A short row and a long one (twice GPT-2's vocabulary).
  for (const Case k : {Case{37, 1001, 1024}, Case{3, 127995, 128000}}) {
    CAPTURE(k.Vp);
    const int rows = k.rows, V = k.V, Vp = k.Vp;
    auto logits = rounded(randn(size_t(rows) * Vp, 240, 4.0f));
    auto targets = randint(rows, V, 241);
    std::vector<float> losses(rows), dlogits(logits.size());
    const float dloss = 1.0f / rows;
    cpu::fused_classifier(dlogits.data(), losses.data(), logits.data(), targets.data(), dloss, 1,
                          rows, V, Vp);
    Dev<cu::bf16> d_logits(to_bf16(logits));
    Dev<float> d_losses(rows);
    Dev<int> d_targets(targets);
    cu::fused_classifier_bf16(nullptr, d_losses, d_logits, d_targets, dloss, rows, V, Vp);
    close("classifier bf16 losses (forward only)", d_losses.download(), losses, 1e-5);
    d_losses.poison();
    cu::fused_classifier_bf16(d_logits, d_losses, d_logits, d_targets, dloss, rows, V, Vp);
    close("classifier bf16 losses", d_losses.download(), losses, 1e-5);
    const auto got = to_float(d_logits.download());
    close("classifier bf16 dlogits", got, dlogits, kBF16);
    bool padded_zero = true;
    for (int r = 0; r < rows; ++r)
      for (int i = V; i < Vp; ++i) padded_zero &= got[size_t(r) * Vp + i] == 0.0f;
    CHECK(padded_zero);
  }
}

TEST_CASE("adamw refreshes the bf16 copy of the parameters in the same pass") {
  const size_t n = 70001;
  auto p = randn(n, 250), g = randn(n, 251, 1e-2f);
  Dev<float> d_p(p), d_g(g), d_m(std::vector<float>(n, 0.f)), d_v(std::vector<float>(n, 0.f));
  Dev<cu::bf16> d_h(n);
  cu::adamw_update(d_p, d_g, d_m, d_v, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, 1.0f, d_h);
  CHECK(same_bits(to_float(d_h.download()), rounded(d_p.download())));
}
