// Finite-difference checks of every CPU op in kernels/ops.h, plus determinism and the
// accumulate (+=) contract the CUDA kernels must also follow.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/dropout_mask.h"
#include "kernels/ops.h"
#include "tests/unit/train/gradcheck.h"
#include "train/backend/cpu/parallel.h"

using gradcheck::check;
using gradcheck::dot;
using gradcheck::randn;
using std::vector;
namespace cpu = gpt::cpu;

TEST_CASE("encoder backward matches finite differences") {
  const int B = 2, T = 3, C = 4, Vp = 5;
  vector<int> inp = {1, 3, 1, 0, 1, 4};  // token 1 repeats: its gradient must accumulate
  auto wte = randn(Vp * C, 1), wpe = randn(T * C, 2), w = randn(B * T * C, 3);
  vector<float> out(B * T * C), dwte(Vp * C), dwpe(T * C);
  auto loss = [&] {
    cpu::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
    return dot(out, w);
  };
  cpu::encoder_backward(dwte.data(), dwpe.data(), w.data(), inp.data(), B, T, C);
  check("dwte", wte, dwte, loss);
  check("dwpe", wpe, dwpe, loss);
}

TEST_CASE("layernorm forward normalises and backward matches finite differences") {
  const int B = 2, T = 3, C = 8;
  auto x = randn(B * T * C, 4, 2.0f), wt = randn(C, 5), bs = randn(C, 6), w = randn(B * T * C, 7);
  vector<float> out(B * T * C), mean(B * T), rstd(B * T);
  vector<float> one(C, 1.0f), zero(C, 0.0f);
  cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), one.data(), zero.data(),
                         B, T, C);
  double m = 0, v = 0;
  for (int c = 0; c < C; ++c) m += out[c];
  for (int c = 0; c < C; ++c) v += out[c] * out[c];
  CHECK(m / C == doctest::Approx(0.0).epsilon(1e-5));
  CHECK(v / C == doctest::Approx(1.0).epsilon(1e-3));
  auto loss = [&] {
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), wt.data(), bs.data(), B,
                           T, C);
    return dot(out, w);
  };
  loss();
  vector<float> dx(x.size()), dw(C), db(C);
  cpu::layernorm_backward(dx.data(), dw.data(), db.data(), w.data(), x.data(), wt.data(),
                          mean.data(), rstd.data(), B, T, C);
  check("dx", x, dx, loss);
  check("dweight", wt, dw, loss);
  check("dbias", bs, db, loss);
}

TEST_CASE("matmul backward matches finite differences, with and without bias") {
  const int B = 2, T = 3, C = 5, OC = 7;
  auto x = randn(B * T * C, 8), wt = randn(OC * C, 9), bs = randn(OC, 10), w = randn(B * T * OC, 11);
  vector<float> out(B * T * OC);
  for (bool with_bias : {true, false}) {
    auto loss = [&] {
      cpu::matmul_forward(out.data(), x.data(), wt.data(), with_bias ? bs.data() : nullptr, B, T, C,
                          OC);
      return dot(out, w);
    };
    vector<float> dx(x.size()), dw(wt.size()), db(OC);
    cpu::matmul_backward(dx.data(), dw.data(), with_bias ? db.data() : nullptr, w.data(), x.data(),
                         wt.data(), B, T, C, OC);
    check("dx", x, dx, loss);
    check("dweight", wt, dw, loss);
    if (with_bias) check("dbias", bs, db, loss);
  }
}

TEST_CASE("gelu forward values and backward") {
  vector<float> x = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f}, out(5);
  cpu::gelu_forward(out.data(), x.data(), 5);
  CHECK(out[2] == 0.0f);
  CHECK(out[3] == doctest::Approx(0.345714).epsilon(1e-5));  // tanh-approx GELU(0.5)
  CHECK(out[4] == doctest::Approx(1.954598).epsilon(1e-5));
  auto w = randn(5, 12);
  auto loss = [&] {
    cpu::gelu_forward(out.data(), x.data(), 5);
    return dot(out, w);
  };
  vector<float> dx(5);
  cpu::gelu_backward(dx.data(), x.data(), w.data(), 5);
  check("dx", x, dx, loss, 24, 1e-3f);
}

TEST_CASE("attention is causal and its backward matches finite differences") {
  const int B = 2, T = 4, C = 6, NH = 2;
  auto qkv = randn(B * T * 3 * C, 13), w = randn(B * T * C, 14);
  vector<float> out(B * T * C), att(B * NH * T * T);
  auto loss = [&] {
    cpu::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    return dot(out, w);
  };
  loss();
  // position 0 attends only to itself: out = v[0]
  for (int i = 0; i < C; ++i) CHECK(out[i] == doctest::Approx(qkv[2 * C + i]));
  for (int t = 0; t < T; ++t) {
    double s = 0;
    for (int t2 = 0; t2 < T; ++t2) s += att[t * T + t2];
    CHECK(s == doctest::Approx(1.0));
    for (int t2 = t + 1; t2 < T; ++t2) CHECK(att[t * T + t2] == 0.0f);
  }
  vector<float> dqkv(qkv.size());
  cpu::attention_backward(dqkv.data(), w.data(), qkv.data(), att.data(), B, T, C, NH);
  check("dqkv", qkv, dqkv, loss, 72);
}

TEST_CASE("attention dropout: the mask of attention_keep at (b,h,i,j), 1/(1-p), exact gradients") {
  // T = 20: elements with bit 3 of i and j set and clear, and groups cut by the end of the rows.
  const int B = 2, T = 20, C = 8, NH = 2, hs = C / NH;
  const float p = 0.4f;
  const uint64_t key = gpt::attention_dropout_key(11, 3);
  auto qkv = randn(B * T * 3 * C, 21), w = randn(B * T * C, 22);
  vector<float> out(B * T * C), att(B * NH * T * T), plain(B * T * C), att0(att.size());
  cpu::attention_forward(plain.data(), att0.data(), qkv.data(), B, T, C, NH);
  auto loss = [&] {
    cpu::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, p, key);
    return dot(out, w);
  };
  loss();
  CHECK(att == att0);  // att holds the probabilities before dropout
  CHECK(out != plain);
  // out[b,t,h,:] = sum_j att·keep/(1-p) · v[b,j,h,:], keep from (b·NH + h, t, j)
  const uint32_t thr = gpt::dropout_threshold(p);
  int dropped = 0, visible = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t)
        for (int d = 0; d < hs; ++d) {
          double o = 0;
          for (int j = 0; j <= t; ++j) {
            const bool keep = gpt::attention_keep(key, b * NH + h, t, j, thr);
            if (d == 0) dropped += !keep, ++visible;
            const float v = qkv[(b * T + j) * 3 * C + 2 * C + h * hs + d];
            if (keep) o += double(att[((size_t(b) * NH + h) * T + t) * T + j]) / (1 - p) * v;
          }
          CHECK(out[(b * T + t) * C + h * hs + d] == doctest::Approx(o).epsilon(1e-5));
        }
  CHECK(dropped > 0);
  CHECK(dropped < visible);
  // the backward regenerates the same mask: finite differences of the masked loss
  vector<float> dqkv(qkv.size());
  cpu::attention_backward(dqkv.data(), w.data(), qkv.data(), att.data(), B, T, C, NH, p, key);
  check("dqkv", qkv, dqkv, loss, 72);
  // p = 0 is the plain attention bit for bit, whatever the key
  cpu::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, 0.0f, key);
  CHECK(out == plain);
}

TEST_CASE("hash32: lowbias32's two multiply-xorshift rounds") {
  // values of the definition, worked out apart from this code
  CHECK(gpt::hash32(0) == 0u);
  CHECK(gpt::hash32(1) == 0x688990c0u);
  CHECK(gpt::hash32(0xdeadbeefu) == 0xe628c683u);
  // and the kernels' split after the first xorshift
  for (uint32_t x : {0u, 1u, 0x12345678u, 0xffffffffu})
    CHECK(gpt::hash32_rest(x ^ x >> 16) == gpt::hash32(x));
}

TEST_CASE("attention dropout mask: one word per four elements, the rate p, independent lanes") {
  const uint64_t key = gpt::attention_dropout_key(gpt::dropout_step_key(5, 2, 1), 7);
  CHECK(gpt::dropout_threshold(0.0f) == 0);
  CHECK(gpt::dropout_threshold(0.1f) == 6554);  // 0.1 · 65536 = 6553.6, rounded
  CHECK(gpt::dropout_threshold(0.5f) == 32768);
  CHECK(gpt::dropout_threshold(0.99999f) == 65535);
  // The definition: lane 2·bit3(i) + bit3(j) of hash32(c ^ kA) << 32 | hash32(c ^ kB) for the
  // group (i0, j0) = (i & ~8, j & ~8), c = i0·65536 + j0, kA << 32 | kB the head's key
  // mix64(key + bh·stride); the kernels walk a row's or a column's groups (AttentionRow,
  // AttentionColumn), which give the same words.
  const uint32_t T = 300;
  const uint32_t thr = gpt::dropout_threshold(0.3f);
  for (uint64_t bh : {0, 5}) {
    const uint64_t hk = gpt::mix64(key + bh * gpt::kDropoutStride);
    for (uint32_t i = 0; i < T; ++i)
      for (uint32_t j = 0; j < T; ++j) {
        const uint32_t i0 = i & ~8u, j0 = j & ~8u, c = i0 << 16 | j0;
        const uint64_t word = uint64_t(gpt::hash32(c ^ uint32_t(hk >> 32))) << 32 |
                              gpt::hash32(c ^ uint32_t(hk));
        const int lane = int(2 * ((i >> 3) & 1) + ((j >> 3) & 1));
        const bool keep = ((word >> (16 * lane)) & 0xFFFF) >= thr;
        REQUIRE(gpt::attention_keep(key, bh, i, j, thr) == keep);
        REQUIRE(gpt::attention_row(key, bh, i0).word(j0) == word);
        REQUIRE(gpt::attention_column(key, bh, j0).word(i0) == word);
      }
  }
  // The drop rate of each lane is p, and two lanes of a word drop together at rate p²: over
  // 4·1024·1024 elements (2^20 words), p = 0.1: sd of a lane's count ~ sqrt(2^20·0.09) ~ 307,
  // of a pair's ~ sqrt(2^20·0.0099) ~ 102; 6 sd.
  const uint32_t T2 = 1024, thr2 = gpt::dropout_threshold(0.1f);
  const double words = double(4) * T2 * T2 / 4;
  size_t lane_drops[4] = {}, pair_drops[4][4] = {};
  for (uint64_t bh = 0; bh < 4; ++bh)
    for (uint32_t i = 0; i < T2; i += 16)
      for (uint32_t j = 0; j < T2; j += 16)
        for (uint32_t di = 0; di < 8; ++di)
          for (uint32_t dj = 0; dj < 8; ++dj) {
            bool drop[4];
            for (int l = 0; l < 4; ++l)
              drop[l] = !gpt::attention_keep(key, bh, i + di + 8 * (l >> 1),
                                             j + dj + 8 * (l & 1), thr2);
            for (int l = 0; l < 4; ++l) {
              lane_drops[l] += drop[l];
              for (int m = l + 1; m < 4; ++m) pair_drops[l][m] += drop[l] && drop[m];
            }
          }
  for (int l = 0; l < 4; ++l) {
    CAPTURE(l);
    CHECK(std::abs(double(lane_drops[l]) - words * 6554 / 65536) < 6 * 307);
    for (int m = l + 1; m < 4; ++m) {
      CAPTURE(m);
      CHECK(std::abs(double(pair_drops[l][m]) - words * 0.1 * 0.1) < 6 * 102);
    }
  }
}

TEST_CASE("fused classifier: loss, gradient, padded vocabulary masked, in place") {
  const int B = 2, T = 2, V = 5, Vp = 8;
  auto logits = randn(B * T * Vp, 15);
  for (int r = 0; r < B * T; ++r)
    for (int i = V; i < Vp; ++i) logits[r * Vp + i] = 100.0f;  // must be ignored
  vector<int> tgt = {0, 4, 2, 3};
  vector<float> losses(B * T), dl(logits.size());
  const float dloss = 1.0f / (B * T);
  auto loss = [&] {
    cpu::fused_classifier(nullptr, losses.data(), logits.data(), tgt.data(), dloss, B, T, V, Vp);
    double s = 0;
    for (float l : losses) s += l;
    return s * dloss;
  };
  loss();
  // hand-computed loss of row 0
  double se = 0;
  for (int i = 0; i < V; ++i) se += std::exp(double(logits[i]));
  CHECK(losses[0] == doctest::Approx(std::log(se) - logits[0]).epsilon(1e-5));
  cpu::fused_classifier(dl.data(), losses.data(), logits.data(), tgt.data(), dloss, B, T, V, Vp);
  for (int i = V; i < Vp; ++i) CHECK(dl[i] == 0.0f);
  check("dlogits", logits, dl, loss, 64, 1e-2f);
  vector<float> inplace = logits;
  cpu::fused_classifier(inplace.data(), losses.data(), inplace.data(), tgt.data(), dloss, B, T, V,
                        Vp);
  CHECK(inplace == dl);
}

TEST_CASE("residual add and its backward accumulate") {
  vector<float> a = {1, 2}, b = {3, 4}, out(2), da = {1, 1}, db = {0, 0}, d = {5, 6};
  cpu::residual_forward(out.data(), a.data(), b.data(), 2);
  CHECK(out == vector<float>{4, 6});
  cpu::residual_backward(da.data(), db.data(), d.data(), 2);
  CHECK(da == vector<float>{6, 7});
  CHECK(db == vector<float>{5, 6});
}

TEST_CASE("dropout drops a fraction p, scales the rest by 1/(1-p), and backward uses the same mask") {
  const size_t n = 200000;
  const float p = 0.1f;
  vector<float> x(n, 1.0f);
  cpu::dropout_forward(x.data(), n, p, 7);
  size_t dropped = 0;
  for (float v : x) {
    if (v == 0.0f) ++dropped;
    else CHECK_MESSAGE(v == 1.0f / (1.0f - p), v);
  }
  // binomial: sd = sqrt(n p (1-p)) ~ 134; 6 sd
  CHECK(std::abs(double(dropped) - p * n) < 800);
  // The definition: element i is lane i % 4 (bits 16·(i % 4) ..) of hash32(i/4 ^ key_hi) << 32 |
  // hash32(i/4 ^ key_lo), kept when it reaches the 16-bit threshold.
  const uint32_t thr = gpt::dropout_threshold(p);
  for (uint64_t i = 0; i < 4096; ++i) {
    const uint32_t c = uint32_t(i / 4);
    const uint64_t word = uint64_t(gpt::hash32(c)) << 32 | gpt::hash32(c ^ 7);
    REQUIRE((x[i] != 0.0f) == (((word >> (16 * (i & 3))) & 0xFFFF) >= thr));
  }
  // A shard from element `first` on (a tensor-parallel rank's rows) drops as the whole does there,
  // also when first is not a multiple of the four elements of a word.
  for (const size_t first : {size_t(0), size_t(13), size_t(4096)}) {
    vector<float> part(1000, 1.0f);
    cpu::dropout_forward(part.data(), part.size(), p, 7, first);
    REQUIRE(std::equal(part.begin(), part.end(), x.begin() + first));
  }
  vector<float> g(n, 2.0f), dg(n, -1.0f);
  cpu::dropout_backward(dg.data(), g.data(), n, p, 7);
  for (size_t i = 0; i < n; ++i) CHECK((dg[i] == 0.0f) == (x[i] == 0.0f));
  // another key, another mask; p = 0 keeps everything unchanged
  vector<float> y(n, 1.0f);
  cpu::dropout_forward(y.data(), n, p, 8);
  CHECK(y != x);
  vector<float> z = randn(1000, 3, 1.0f), z0 = z;
  cpu::dropout_forward(z.data(), z.size(), 0.0f, 9);
  CHECK(z == z0);
}

TEST_CASE("adamw update matches a hand-computed step, including decoupled weight decay") {
  vector<float> p = {1.0f, -2.0f}, g = {0.5f, -0.25f}, m = {0, 0}, v = {0, 0};
  const float lr = 0.1f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
  cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), 2, lr, b1, b2, eps, wd, 1, 2.0f);
  // step 1: mhat = g', vhat = g'^2 → update = sign(g') (up to eps), g' = 2g
  CHECK(p[0] == doctest::Approx(1.0 - 0.1 * (1.0 + 0.1 * 1.0)).epsilon(1e-6));
  CHECK(p[1] == doctest::Approx(-2.0 - 0.1 * (-1.0 + 0.1 * -2.0)).epsilon(1e-6));
  CHECK(m[0] == doctest::Approx(0.1 * 1.0));
  CHECK(v[1] == doctest::Approx(0.05 * 0.25));
}

TEST_CASE("sum of squares and clip scale") {
  vector<float> x(200000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 7) * 0.5f - 1.0f;
  double ref = 0;
  for (float f : x) ref += double(f) * f;
  CHECK(cpu::sum_squares(x.data(), x.size()) == doctest::Approx(ref).epsilon(1e-12));
  CHECK(gpt::clip_scale(0.5f, 1.0f) == 1.0f);
  CHECK(gpt::clip_scale(4.0f, 1.0f) == doctest::Approx(0.25f));
  CHECK(gpt::clip_scale(4.0f, 0.0f) == 1.0f);
}

TEST_CASE("ops are bit-identical across thread counts") {
  const int B = 2, T = 16, C = 32, OC = 48;
  auto x = randn(B * T * C, 16), wt = randn(OC * C, 17), d = randn(B * T * OC, 18);
  auto run = [&](int threads) {
    cpu::set_num_threads(threads);
    vector<float> dx(x.size()), dw(wt.size()), db(OC);
    cpu::matmul_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), wt.data(), B, T, C, OC);
    dw.insert(dw.end(), dx.begin(), dx.end());
    dw.insert(dw.end(), db.begin(), db.end());
    double ss = cpu::sum_squares(dw.data(), dw.size());
    dw.push_back(float(ss));
    return dw;
  };
  const int keep = cpu::num_threads();
  auto one = run(1), four = run(4);
  cpu::set_num_threads(keep);
  CHECK(one == four);
}
