// Whole-model checks on the CPU backend: finite-difference gradients, Megatron init statistics,
// parameter layout.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/unit/train/gradcheck.h"
#include "train/backend/backend.h"
#include "train/model/init.h"

namespace {
gpt::ModelConfig tiny() {
  gpt::ModelConfig c;
  c.num_layers = 2;
  c.hidden_size = 8;
  c.num_heads = 2;
  c.ffn_hidden_size = 16;
  c.seq_length = 4;
  c.max_position_embeddings = 6;
  c.vocab_size = 11;
  c.padded_vocab_size = 16;
  c.init_method_std = 0.3f;  // large so every path carries gradient worth checking
  return c;
}

// Each parameter tensor's gradient in `grads` against central differences of loss() (which reads
// `params`), 8 probes per tensor.
template <class Loss>
void check_every_tensor(const gpt::ParamLayout& layout, std::vector<float>& params,
                        const std::vector<float>& grads, Loss& loss) {
  for (const auto& t : layout.tensors()) {
    std::vector<float> x(params.begin() + t.offset, params.begin() + t.offset + t.numel);
    std::vector<float> g(grads.begin() + t.offset, grads.begin() + t.offset + t.numel);
    auto tensor_loss = [&] {
      std::copy(x.begin(), x.end(), params.begin() + t.offset);
      return loss();
    };
    gradcheck::check(t.name, x, g, tensor_loss, 8, 1e-2f, 3e-2, 1e-3);
    std::copy(x.begin(), x.end(), params.begin() + t.offset);
  }
}
}  // namespace

TEST_CASE("tiny GPT: every parameter tensor's gradient matches finite differences") {
  const auto cfg = tiny();
  gpt::ParamLayout layout(cfg);
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 7);
  // non-trivial biases and norms so their gradients are exercised too
  auto noise = gradcheck::randn(params.size(), 99, 0.1f);
  for (size_t i = 0; i < params.size(); ++i) params[i] += noise[i];
  gpt::BackendOptions opt;
  opt.micro_batch = 2;
  auto be = gpt::make_backend(cfg, layout, opt);
  std::vector<int> in = {1, 5, 7, 1, 10, 0, 3, 3}, tgt = {5, 7, 1, 2, 0, 3, 3, 9};
  be->set_params(params.data());
  be->zero_grad();
  const float loss0 = be->forward_backward(in.data(), tgt.data(), 1.0f / 8);
  CHECK(std::isfinite(loss0));
  std::vector<float> grads(layout.total());
  be->get_grads(grads.data());
  auto loss = [&] {
    be->set_params(params.data());
    return double(be->forward_loss(in.data(), tgt.data()));
  };
  CHECK(loss() == doctest::Approx(loss0).epsilon(1e-6));
  check_every_tensor(layout, params, grads, loss);
  // padded vocabulary rows get no gradient from the loss (only row use as input would)
  const auto& wte = layout.find("embedding.word_embeddings.weight");
  for (int r = cfg.vocab_size; r < cfg.padded_vocab_size; ++r)
    for (int c = 0; c < cfg.hidden_size; ++c) CHECK(grads[wte.offset + r * cfg.hidden_size + c] == 0.0f);
}

TEST_CASE("hidden dropout: gradients match finite differences of the same masked loss") {
  const auto cfg = tiny();
  gpt::ParamLayout layout(cfg);
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 7);
  gpt::BackendOptions opt;
  opt.micro_batch = 2;
  opt.hidden_dropout = 0.3f;
  auto be = gpt::make_backend(cfg, layout, opt);
  gpt::BackendOptions plain_opt;
  plain_opt.micro_batch = 2;
  auto plain = gpt::make_backend(cfg, layout, plain_opt);
  std::vector<int> in = {1, 5, 7, 1, 10, 0, 3, 3}, tgt = {5, 7, 1, 2, 0, 3, 3, 9};
  be->set_params(params.data());
  plain->set_params(params.data());
  be->set_dropout_key(42);
  be->zero_grad();
  const float loss0 = be->forward_backward(in.data(), tgt.data(), 1.0f / 8);
  std::vector<float> grads(layout.total());
  be->get_grads(grads.data());
  // evaluation never drops; training with another key drops other elements
  const float eval = be->forward_loss(in.data(), tgt.data());
  CHECK(eval == plain->forward_loss(in.data(), tgt.data()));
  CHECK(loss0 != eval);
  be->set_dropout_key(43);
  CHECK(be->forward_backward(in.data(), tgt.data(), 1.0f / 8) != loss0);
  be->set_dropout_key(42);
  // the training loss under key 42 as a function of the parameters (grads accumulate, unused)
  auto loss = [&] {
    be->set_params(params.data());
    return double(be->forward_backward(in.data(), tgt.data(), 1.0f / 8));
  };
  CHECK(loss() == loss0);
  check_every_tensor(layout, params, grads, loss);
}

TEST_CASE("attention dropout: gradients match finite differences of the same masked loss") {
  const auto cfg = tiny();
  gpt::ParamLayout layout(cfg);
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 7);
  gpt::BackendOptions opt;
  opt.micro_batch = 2;
  opt.attention_dropout = 0.3f;
  opt.hidden_dropout = 0.1f;
  auto be = gpt::make_backend(cfg, layout, opt);
  opt.attention_dropout = 0.0f;
  auto hidden = gpt::make_backend(cfg, layout, opt);
  std::vector<int> in = {1, 5, 7, 1, 10, 0, 3, 3}, tgt = {5, 7, 1, 2, 0, 3, 3, 9};
  be->set_params(params.data());
  hidden->set_params(params.data());
  be->set_dropout_key(42);
  hidden->set_dropout_key(42);
  be->zero_grad();
  const float loss0 = be->forward_backward(in.data(), tgt.data(), 1.0f / 8);
  std::vector<float> grads(layout.total());
  be->get_grads(grads.data());
  // evaluation never drops; attention dropout changes the training loss
  CHECK(be->forward_loss(in.data(), tgt.data()) == hidden->forward_loss(in.data(), tgt.data()));
  CHECK(loss0 != hidden->forward_backward(in.data(), tgt.data(), 1.0f / 8));
  auto loss = [&] {
    be->set_params(params.data());
    return double(be->forward_backward(in.data(), tgt.data(), 1.0f / 8));
  };
  CHECK(loss() == loss0);
  check_every_tensor(layout, params, grads, loss);
}

TEST_CASE("Megatron init: std 0.02, output layers scaled by 1/sqrt(2L), biases 0, LN weight 1") {
  gpt::ModelConfig c;
  c.num_layers = 8;
  c.hidden_size = 64;
  c.num_heads = 4;
  c.ffn_hidden_size = 256;
  c.seq_length = 16;
  c.max_position_embeddings = 16;
  c.vocab_size = 100;
  c.padded_vocab_size = gpt::pad_vocab(100);
  c.validate();
  CHECK(c.padded_vocab_size == 128);
  CHECK(gpt::pad_vocab(50257) == 50304);
  CHECK(gpt::pad_vocab(50257, 8) == 51200);
  gpt::ParamLayout layout(c);
  CHECK(int64_t(layout.total()) == c.num_parameters());
  std::vector<float> p(layout.total());
  gpt::init_parameters(p.data(), c, layout, 1234);
  auto stdev = [&](const std::string& name) {
    const auto& t = layout.find(name);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < t.numel; ++i) {
      s += p[t.offset + i];
      s2 += double(p[t.offset + i]) * p[t.offset + i];
    }
    return std::sqrt(s2 / t.numel - (s / t.numel) * (s / t.numel));
  };
  CHECK(stdev("decoder.layers.0.mlp.linear_fc1.weight") == doctest::Approx(0.02).epsilon(0.03));
  CHECK(stdev("decoder.layers.3.mlp.linear_fc2.weight") ==
        doctest::Approx(0.02 / std::sqrt(16.0)).epsilon(0.03));
  CHECK(stdev("decoder.layers.1.self_attention.linear_proj.weight") ==
        doctest::Approx(0.005).epsilon(0.05));
  const auto& b = layout.find("decoder.layers.2.self_attention.linear_qkv.bias");
  const auto& w = layout.find("decoder.final_layernorm.weight");
  for (size_t i = 0; i < b.numel; ++i) CHECK(p[b.offset + i] == 0.0f);
  for (size_t i = 0; i < w.numel; ++i) CHECK(p[w.offset + i] == 1.0f);
  // same seed → same values; different seed → different
  std::vector<float> q(layout.total());
  gpt::init_parameters(q.data(), c, layout, 1234);
  CHECK(p == q);
  gpt::init_parameters(q.data(), c, layout, 1235);
  CHECK(p != q);
}

TEST_CASE("model shape validation names the flag") {
  gpt::ModelConfig c = tiny();
  c.seq_length = 7;
  CHECK_THROWS_WITH(c.validate(), doctest::Contains("--max-position-embeddings"));
  c = tiny();
  c.num_heads = 3;
  CHECK_THROWS_WITH(c.validate(), doctest::Contains("--num-attention-heads"));
}
