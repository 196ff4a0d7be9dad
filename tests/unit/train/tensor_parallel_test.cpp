// Tensor and pipeline parallelism on the CPU backend against the one-process model: the shard
// layout and its helpers, the sliced initialisation, T = 2 ranks as threads over a TCP
// communicator pair (with and without sequence parallelism, dropout on), and a model cut into two
// pipeline stages. --vocab-size 300 pads to 384 at T = 1 and to 512 at T = 2.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>

#include "tests/unit/dist/dist_test_helpers.h"
#include "train/backend/backend.h"
#include "train/dist/tcp_communicator.h"
#include "train/model/init.h"

namespace {

gpt::ModelConfig config(int tp, int layers = 2) {
  gpt::ModelConfig c;
  c.num_layers = layers;
  c.hidden_size = 16;
  c.num_heads = 4;
  c.ffn_hidden_size = 64;
  c.seq_length = 8;
  c.max_position_embeddings = 8;
  c.vocab_size = 300;
  c.padded_vocab_size = gpt::pad_vocab(300, tp);
  c.init_method_std = 0.2f;  // large, so that every path carries gradient
  return c;
}

constexpr int kB = 2;
constexpr uint64_t kSeed = 7;

// Two micro-batches of [B, T] tokens, some in each half of the vocabulary.
struct Batch {
  std::vector<int> in[2], tgt[2];
};
Batch batch() {
  std::mt19937 g(5);
  std::uniform_int_distribution<int> tok(0, 299);
  Batch b;
  for (int m = 0; m < 2; ++m)
    for (int i = 0; i < kB * 8; ++i) {
      b.in[m].push_back(tok(g));
      b.tgt[m].push_back(tok(g));
    }
  return b;
}

gpt::BackendOptions options(const gpt::StageSpec& stage, float dropout) {
  gpt::BackendOptions o;
  o.micro_batch = kB;
  o.hidden_dropout = dropout;
  o.attention_dropout = dropout;
  o.stage = stage;
  return o;
}

// What a run leaves: the losses, the norm, the gradients and (after one AdamW step) the parameters
// as whole tensors of the T = 1 model (padded rows beyond 384 dropped), and the next eval loss.
struct Result {
  float loss[2] = {0, 0};
  double norm = 0;
  std::vector<float> grads, params;
  float eval = 0;
};

// A flat buffer of `layout` (padded vocabulary Vp) as the T = 1 flat buffer (Vp = 384).
std::vector<float> to_reference(const gpt::ParamLayout& from, const std::vector<float>& full,
                                int layers = 2) {
  const gpt::ParamLayout ref(config(1, layers));
  std::vector<float> out(ref.total(), 0.0f);
  for (const auto& t : ref.tensors()) {
    const auto& f = from.find(t.name);
    std::memcpy(out.data() + t.offset, full.data() + f.offset,
                std::min(t.numel, f.numel) * sizeof(float));
  }
  return out;
}

// One training step of two micro-batches, then one eval, on `be`.
template <class Backend>
void step(Backend& be, const Batch& b, Result& r) {
  be.zero_grad();
  for (int m = 0; m < 2; ++m) {
    be.set_dropout_key(100 + m);
    r.loss[m] = be.forward_backward(b.in[m].data(), b.tgt[m].data(), 1.0f / (2 * kB * 8));
  }
  r.norm = be.grad_norm();
}

Result run_reference(float dropout, int layers = 2) {
  const auto cfg = config(1, layers);
  gpt::ParamLayout layout(cfg);
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, kSeed);
  auto be = gpt::make_backend(cfg, layout, options({}, dropout));
  be->set_params(params.data());
  Result r;
  step(*be, batch(), r);
  r.grads.resize(layout.total());
  be->get_grads(r.grads.data());
  be->adamw_step({}, 1e-2f, 1, 1.0f);
  r.params.resize(layout.total());
  be->get_params(r.params.data());
  const Batch b = batch();
  r.eval = be->forward_loss(b.in[0].data(), b.tgt[0].data());
  return r;
}

// T = 2 ranks as threads, a TCP communicator between them.
Result run_tp2(bool sequence_parallel, float dropout) {
  const auto cfg = config(2);
  const gpt::ParamLayout full(cfg);
  gpt::dist::TcpStoreServer server("127.0.0.1", 0);
  const int port = server.port();
  Result out[2];
  std::vector<float> local_grads[2], local_params[2];
  std::vector<gpt::ParamLayout> layouts;
  for (int rank = 0; rank < 2; ++rank) {
    gpt::StageSpec stage;
    stage.tp_size = 2;
    stage.tp_rank = rank;
    stage.sequence_parallel = sequence_parallel;
    layouts.emplace_back(cfg, stage);
  }
  auto errors = dist_test::run_ranks(2, [&](int rank) {
    gpt::dist::TcpStore store("127.0.0.1", port, 10, 10, "/tp/");
    gpt::dist::TcpCommunicator comm(store, rank, 2, {"h0", "h1"}, 10);
    const gpt::ParamLayout& layout = layouts[rank];
    std::vector<float> p(layout.total());
    gpt::init_parameters(p.data(), cfg, layout, kSeed);
    auto opt = options(layout.stage(), dropout);
    opt.tp_comm = &comm;
    auto be = gpt::make_backend(cfg, layout, opt);
    be->set_params(p.data());
    step(*be, batch(), out[rank]);
    local_grads[rank].resize(layout.total());
    be->get_grads(local_grads[rank].data());
    be->adamw_step({}, 1e-2f, 1, 1.0f);
    local_params[rank].resize(layout.total());
    be->get_params(local_params[rank].data());
    const Batch b = batch();
    out[rank].eval = be->forward_loss(b.in[0].data(), b.tgt[0].data());
  });
  for (auto& e : errors) REQUIRE(e == "");
  CHECK(out[0].loss[0] == out[1].loss[0]);
  CHECK(out[0].norm == out[1].norm);
  CHECK(out[0].eval == out[1].eval);
  // replicated tensors: bit-identical gradients and parameters on both ranks
  for (const auto& t : layouts[0].tensors())
    if (gpt::ParamLayout::replicated_in_tp(t)) {
      CHECK_MESSAGE(std::memcmp(local_grads[0].data() + t.offset, local_grads[1].data() + t.offset,
                                t.numel * sizeof(float)) == 0, t.name);
      CHECK_MESSAGE(std::memcmp(local_params[0].data() + t.offset,
                                local_params[1].data() + t.offset, t.numel * sizeof(float)) == 0,
                    t.name);
    }
  std::vector<float> grads(full.total(), 0.0f), params(full.total(), 0.0f);
  for (int rank = 0; rank < 2; ++rank) {
    layouts[rank].unshard_into_full(full, local_grads[rank].data(), grads.data());
    layouts[rank].unshard_into_full(full, local_params[rank].data(), params.data());
  }
  Result r = out[0];
  r.grads = to_reference(full, grads);
  r.params = to_reference(full, params);
  return r;
}

// ||a - b|| <= tol·||b|| tensor by tensor (tensors of the T = 1 layout). `updated`: parameters
// after AdamW, where the key bias is left out: its gradient is zero but for rounding (the softmax
// does not change when every key moves by the same vector), and Adam's normalised step turns that
// noise into ±lr.
void check_close(const std::vector<float>& a, const std::vector<float>& b, double tol,
                 bool updated = false, int layers = 2) {
  const gpt::ParamLayout layout(config(1, layers));
  for (const auto& t : layout.tensors()) {
    double diff = 0, ref = 0;
    const bool qkv_bias = t.name.ends_with("linear_qkv.bias");
    for (size_t i = t.offset; i < t.offset + t.numel; ++i) {
      if (updated && qkv_bias && (i - t.offset) / (t.numel / 3) == 1) continue;
      diff += double(a[i] - b[i]) * (a[i] - b[i]);
      ref += double(b[i]) * b[i];
    }
    CHECK_MESSAGE(std::sqrt(diff) <= tol * std::sqrt(ref) + 1e-30, t.name);
  }
}

void check_equivalent(const Result& tp, const Result& ref) {
  for (int m = 0; m < 2; ++m) CHECK(tp.loss[m] == doctest::Approx(ref.loss[m]).epsilon(1e-5));
  CHECK(tp.norm == doctest::Approx(ref.norm).epsilon(1e-5));
  check_close(tp.grads, ref.grads, 1e-5);
  check_close(tp.params, ref.params, 1e-5, /*updated=*/true);
  CHECK(tp.eval == doctest::Approx(ref.eval).epsilon(1e-5));
}

}  // namespace

TEST_CASE("tensor-parallel layout: shards of each tensor, padded vocabulary, roundtrip") {
  const auto cfg = config(2);
  CHECK(config(1).padded_vocab_size == 384);
  CHECK(cfg.padded_vocab_size == 512);
  const gpt::ParamLayout full(cfg);
  std::vector<float> whole(full.total());
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = float(i);
  std::vector<float> back(full.total(), -1.0f);
  size_t sum = 0;
  for (int rank = 0; rank < 2; ++rank) {
    gpt::StageSpec stage;
    stage.tp_size = 2;
    stage.tp_rank = rank;
    gpt::ParamLayout layout(cfg, stage);
    CHECK(layout.tensors().size() == full.tensors().size());
    CHECK(layout.vocab_begin() == 256 * rank);
    CHECK(layout.local_vocab() == 256);
    std::vector<float> local(layout.total());
    layout.shard_of_full(full, whole.data(), local.data());
    // qkv: rows [8r, 8r+8) of each third (q, k, v); proj: columns [8r, 8r+8); fc1: rows
    const auto& qkv = layout.find("decoder.layers.1.self_attention.linear_qkv.weight");
    const auto& gqkv = full.find("decoder.layers.1.self_attention.linear_qkv.weight");
    CHECK(qkv.split == gpt::TensorSplit::kQkvRows);
    CHECK(qkv.shape == std::vector<int>{24, 16});
    CHECK(qkv.global_shape == std::vector<int>{48, 16});
    CHECK(local[qkv.offset + 8 * 16 + 3] == whole[gqkv.offset + (16 + 8 * rank) * 16 + 3]);
    const auto& proj = layout.find("decoder.layers.0.self_attention.linear_proj.weight");
    const auto& gproj = full.find("decoder.layers.0.self_attention.linear_proj.weight");
    CHECK(proj.split == gpt::TensorSplit::kColumns);
    CHECK(local[proj.offset + 2 * 8 + 5] == whole[gproj.offset + 2 * 16 + 8 * rank + 5]);
    const auto& fc1b = layout.find("decoder.layers.0.mlp.linear_fc1.bias");
    CHECK(local[fc1b.offset] == whole[full.find(fc1b.name).offset + 32 * rank]);
    CHECK(layout.find("decoder.layers.0.mlp.linear_fc2.bias").split ==
          gpt::TensorSplit::kReplicated);
    CHECK(layout.find("embedding.word_embeddings.weight").shape == std::vector<int>{256, 16});
    layout.unshard_into_full(full, local.data(), back.data());
    for (const auto& t : layout.tensors())
      sum += gpt::ParamLayout::replicated_in_tp(t) ? t.numel : 2 * t.numel;
  }
  CHECK(back == whole);
  CHECK(sum == 2 * full.total());
}

TEST_CASE("tensor-parallel layout: a pipeline stage's tensors keep global names and indices") {
  auto cfg = config(1);
  cfg.num_layers = 4;
  const gpt::ParamLayout full(cfg);
  gpt::StageSpec last;
  last.first_layer = 3;
  last.num_layers = 1;
  last.has_embedding = false;
  gpt::ParamLayout layout(cfg, last);
  CHECK(layout.has_wte());
  CHECK_FALSE(layout.has_wpe());
  CHECK(layout.num_layers() == 1);
  CHECK(layout.tensors().front().name == "embedding.word_embeddings.weight");
  CHECK(layout.tensors()[1].name == "decoder.layers.3.input_layernorm.weight");
  for (const auto& t : layout.tensors()) {
    CHECK(full.tensors()[t.global_index].name == t.name);
    CHECK(t.numel == full.tensors()[t.global_index].numel);
  }
  gpt::StageSpec middle = last;
  middle.first_layer = 1;
  middle.num_layers = 2;
  middle.has_head = false;
  gpt::ParamLayout mid(cfg, middle);
  CHECK_FALSE(mid.has_wte());
  CHECK(mid.tensors().size() == 24);
  CHECK(mid.tensors().front().name == "decoder.layers.1.input_layernorm.weight");
  gpt::StageSpec bad = middle;
  bad.num_layers = 4;
  CHECK_THROWS(gpt::ParamLayout(cfg, bad));
  gpt::StageSpec three;
  three.tp_size = 3;
  CHECK_THROWS(gpt::ParamLayout(config(2), three));  // 3 divides neither the heads nor 512
}

TEST_CASE("tensor-parallel init: every shard is the slice of the one-process init") {
  auto cfg = config(2);
  cfg.num_layers = 3;
  const gpt::ParamLayout full(cfg);
  std::vector<float> whole(full.total());
  gpt::init_parameters(whole.data(), cfg, full, kSeed);
  for (int first : {0, 2})
    for (int rank = 0; rank < 2; ++rank) {
      gpt::StageSpec stage;
      stage.tp_size = 2;
      stage.tp_rank = rank;
      stage.first_layer = first;
      stage.num_layers = first == 0 ? 2 : 1;
      stage.has_embedding = first == 0;
      stage.has_head = first != 0;
      gpt::ParamLayout layout(cfg, stage);
      std::vector<float> mine(layout.total()), sliced(layout.total());
      gpt::init_parameters(mine.data(), cfg, layout, kSeed);
      layout.shard_of_full(full, whole.data(), sliced.data());
      CHECK(mine == sliced);
    }
  // the real vocabulary rows do not depend on the padding
  const auto one = config(1);
  const gpt::ParamLayout l1(one);
  std::vector<float> w1(l1.total());
  gpt::init_parameters(w1.data(), one, l1, kSeed);
  CHECK(std::memcmp(w1.data(), whole.data(), 300 * 16 * sizeof(float)) == 0);
}

TEST_CASE("tensor parallelism T=2: losses, gradients and the step equal one process") {
  const Result ref = run_reference(0.0f);
  SUBCASE("plain") { check_equivalent(run_tp2(false, 0.0f), ref); }
  SUBCASE("sequence parallel") { check_equivalent(run_tp2(true, 0.0f), ref); }
}

TEST_CASE("tensor parallelism T=2 with hidden and attention dropout: the one-process masks") {
  const Result ref = run_reference(0.2f);
  CHECK(ref.loss[0] != run_reference(0.0f).loss[0]);
  SUBCASE("plain") { check_equivalent(run_tp2(false, 0.2f), ref); }
  SUBCASE("sequence parallel") { check_equivalent(run_tp2(true, 0.2f), ref); }
}

TEST_CASE("pipeline stages: two stages, two micro-batches in flight, equal the whole model") {
  auto cfg = config(1);
  cfg.num_layers = 3;
  const float dropout = 0.1f;
  const Batch b = batch();
  const float w = 1.0f / (2 * kB * 8);
  const gpt::ParamLayout full(cfg);
  std::vector<float> params(full.total());
  gpt::init_parameters(params.data(), cfg, full, kSeed);
  auto whole = gpt::make_backend(cfg, full, options({}, dropout));
  whole->set_params(params.data());
  whole->zero_grad();
  float ref_loss[2];
  for (int m = 0; m < 2; ++m) {
    whole->set_dropout_key(100 + m);
    ref_loss[m] = whole->forward_backward(b.in[m].data(), b.tgt[m].data(), w);
  }
  std::vector<float> ref_grads(full.total());
  whole->get_grads(ref_grads.data());
  const float ref_eval = whole->forward_loss(b.in[1].data(), b.tgt[1].data());

  gpt::StageSpec s0, s1;
  s0.num_layers = 1;
  s0.has_head = false;
  s1.first_layer = 1;
  s1.has_embedding = false;
  std::unique_ptr<gpt::Backend> be[2];
  gpt::ParamLayout layouts[2] = {gpt::ParamLayout(cfg, s0), gpt::ParamLayout(cfg, s1)};
  for (int s = 0; s < 2; ++s) {
    auto opt = options(s == 0 ? s0 : s1, dropout);
    opt.pipeline_slots = 2;
    be[s] = gpt::make_backend(cfg, layouts[s], opt);
    std::vector<float> p(layouts[s].total());
    gpt::init_parameters(p.data(), cfg, layouts[s], kSeed);
    be[s]->set_params(p.data());
    be[s]->zero_grad();
    CHECK(be[s]->stage_activation_elements() == size_t(kB) * 8 * 16);
    CHECK(be[s]->stage_activation_dtype() == gpt::dist::DType::kF32);
    CHECK(be[s]->stage_buffer_count() == 6);
  }
  // forward 0, forward 1, backward 0, backward 1 (as 1F1B's warm-up does)
  float* act[2] = {static_cast<float*>(be[0]->stage_buffer(0)),
                   static_cast<float*>(be[0]->stage_buffer(1))};
  float* dact = static_cast<float*>(be[1]->stage_buffer(2));
  float loss[2];
  for (int m = 0; m < 2; ++m) {
    be[0]->set_dropout_key(100 + m);
    be[1]->set_dropout_key(100 + m);
    CHECK(be[0]->stage_forward(m, b.in[m].data(), nullptr, nullptr, act[m]) == 0.0f);
    loss[m] = be[1]->stage_forward(m, nullptr, b.tgt[m].data(), act[m], nullptr);
  }
  CHECK_THROWS(be[0]->stage_forward(0, b.in[0].data(), nullptr, nullptr, act[0]));  // in use
  be[0]->set_dropout_key(999);  // the slots keep their own keys
  be[1]->set_dropout_key(999);
  for (int m = 0; m < 2; ++m) {
    be[1]->stage_backward(m, nullptr, dact, w);
    be[0]->stage_backward(m, dact, nullptr, 0.0f);
    CHECK(loss[m] == doctest::Approx(ref_loss[m]).epsilon(1e-6));
  }
  // every tensor's gradient is the whole model's; the tied word embedding's is the two stages' sum
  std::vector<float> grads(full.total(), 0.0f), g[2];
  for (int s = 0; s < 2; ++s) {
    g[s].resize(layouts[s].total());
    be[s]->get_grads(g[s].data());
  }
  const size_t wte_n = layouts[0].wte_numel();
  CHECK(layouts[1].wte_numel() == wte_n);
  for (size_t i = 0; i < wte_n; ++i) g[0][layouts[0].wte() + i] += g[1][layouts[1].wte() + i];
  layouts[1].unshard_into_full(full, g[1].data(), grads.data());
  layouts[0].unshard_into_full(full, g[0].data(), grads.data());  // the summed wte last
  for (const auto& t : full.tensors()) {
    double diff = 0, ref = 0;
    for (size_t i = t.offset; i < t.offset + t.numel; ++i) {
      diff += double(grads[i] - ref_grads[i]) * (grads[i] - ref_grads[i]);
      ref += double(ref_grads[i]) * ref_grads[i];
    }
    CHECK_MESSAGE(std::sqrt(diff) <= 1e-6 * std::sqrt(ref), t.name);
  }
  // evaluation through the stages
  be[0]->stage_forward_loss(b.in[1].data(), nullptr, nullptr, act[0]);
  CHECK(be[1]->stage_forward_loss(nullptr, b.tgt[1].data(), act[0], nullptr) ==
        doctest::Approx(ref_eval).epsilon(1e-6));
}

// Stages of `layers[s]` transformer layers (the first with the embedding, the last with the head),
// each of T = 2 ranks as threads with its own TCP group; micro-batch 0 and 1 forward through every
// stage, then both backward. Returns the losses, the gradients (the tied word embedding's summed
// over the first and last stage) and the norm from the stages' grad_norm().
Result run_pipeline_tp2(const std::vector<int>& layers, bool sequence_parallel, float dropout) {
  const int P = int(layers.size());
  int L = 0;
  for (int n : layers) L += n;
  const auto cfg = config(2, L);
  const gpt::ParamLayout full(cfg);
  const Batch b = batch();
  const float w = 1.0f / (2 * kB * 8);
  struct Rank {
    std::unique_ptr<gpt::dist::TcpStore> store;
    std::unique_ptr<gpt::dist::TcpCommunicator> comm;
    std::unique_ptr<gpt::ParamLayout> layout;
    std::unique_ptr<gpt::Backend> be;
    std::vector<float> act[2], dact[2];  // this stage's output and its gradient per micro-batch
  };
  std::vector<std::array<Rank, 2>> st(P);
  std::vector<std::unique_ptr<gpt::dist::TcpStoreServer>> servers;
  auto each_rank = [&](int s, const std::function<void(int, Rank&)>& fn) {
    for (auto& e : dist_test::run_ranks(2, [&](int r) { fn(r, st[s][r]); })) REQUIRE(e == "");
  };
  int first = 0;
  for (int s = 0; s < P; ++s) {
    servers.push_back(std::make_unique<gpt::dist::TcpStoreServer>("127.0.0.1", 0));
    const int port = servers.back()->port();
    each_rank(s, [&](int r, Rank& k) {
      gpt::StageSpec stage;
      stage.first_layer = first;
      stage.num_layers = layers[s];
      stage.has_embedding = s == 0;
      stage.has_head = s == P - 1;
      stage.tp_size = 2;
      stage.tp_rank = r;
      stage.sequence_parallel = sequence_parallel;
      k.store = std::make_unique<gpt::dist::TcpStore>("127.0.0.1", port, 10, 10, "/pp/");
      k.comm = std::make_unique<gpt::dist::TcpCommunicator>(*k.store, r, 2,
                                                            std::vector<std::string>{"a", "b"}, 10);
      k.layout = std::make_unique<gpt::ParamLayout>(cfg, stage);
      auto opt = options(stage, dropout);
      opt.tp_comm = k.comm.get();
      opt.pipeline_slots = 2;
      k.be = gpt::make_backend(cfg, *k.layout, opt);
      std::vector<float> p(k.layout->total());
      gpt::init_parameters(p.data(), cfg, *k.layout, kSeed);
      k.be->set_params(p.data());
      k.be->zero_grad();
      for (auto* v : {&k.act[0], &k.act[1], &k.dact[0], &k.dact[1]})
        v->resize(k.be->stage_activation_elements());
    });
    first += layers[s];
  }
  Result out;
  for (int m = 0; m < 2; ++m)
    for (int s = 0; s < P; ++s)
      each_rank(s, [&](int r, Rank& k) {
        k.be->set_dropout_key(100 + m);
        const float loss = k.be->stage_forward(m, b.in[m].data(), b.tgt[m].data(),
                                               s ? st[s - 1][r].act[m].data() : nullptr,
                                               k.act[m].data());
        if (s == P - 1 && r == 0) out.loss[m] = loss;
      });
  for (int m = 0; m < 2; ++m)
    for (int s = P - 1; s >= 0; --s)
      each_rank(s, [&](int r, Rank& k) {
        k.be->stage_backward(m, s < P - 1 ? st[s + 1][r].dact[m].data() : nullptr,
                             k.dact[m].data(), w);
      });
  std::vector<float> grads(full.total(), 0.0f);
  for (int r = 0; r < 2; ++r) {
    std::vector<std::vector<float>> g(P);
    for (int s = 0; s < P; ++s) {
      g[s].resize(st[s][r].layout->total());
      st[s][r].be->get_grads(g[s].data());
    }
    // the embedding group's sum, in place in both stages' gradients (as the executor does)
    const auto &l0 = *st[0][r].layout, &ll = *st[P - 1][r].layout;
    float* g0 = st[0][r].be->flat_buffers().grads + l0.wte();
    float* gl = st[P - 1][r].be->flat_buffers().grads + ll.wte();
    for (size_t i = 0; i < l0.wte_numel(); ++i) g0[i] = gl[i] = g0[i] + gl[i];
    for (int s = 0; s < P; ++s) {
      st[s][r].be->get_grads(g[s].data());
      st[s][r].layout->unshard_into_full(full, g[s].data(), grads.data());
    }
  }
  out.grads = to_reference(full, grads, L);
  // the global norm from the stages' norms (each over its TP group)
  for (int s = 0; s < P; ++s) {
    double norm[2];
    each_rank(s, [&](int r, Rank& k) { norm[r] = k.be->grad_norm(); });
    CHECK(norm[0] == norm[1]);
    out.norm += norm[0] * norm[0];
  }
  out.norm = std::sqrt(out.norm);
  return out;
}

TEST_CASE("pipeline stages with T=2: 0-2-1 layers, sequence parallel, equal the whole model") {
  const Result ref = run_reference(0.1f, 3);
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    const Result pp = run_pipeline_tp2({0, 2, 1}, sp, 0.1f);
    for (int m = 0; m < 2; ++m) CHECK(pp.loss[m] == doctest::Approx(ref.loss[m]).epsilon(1e-5));
    CHECK(pp.norm == doctest::Approx(ref.norm).epsilon(1e-5));
    check_close(pp.grads, ref.grads, 1e-5, false, 3);
  }
}
