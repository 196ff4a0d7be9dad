// Checkpoints at any layout: the shards of a (T, P, D) run saved as global tensors, and any
// checkpoint sliced for another layout, the vocabulary rows padded or trimmed.
#include <doctest/doctest.h>

#include <filesystem>

#include "common/cli/error.h"
#include "tests/unit/train/gradcheck.h"
#include "tests/unit/train/train_helpers.h"
#include "train/loop/data_parallel.h"
#include "train/model/checkpoint.h"
#include "train/model/hf.h"

namespace {

gpt::ModelConfig model(int tp) {
  gpt::ModelConfig c;
  c.num_layers = 4;
  c.hidden_size = 8;
  c.num_heads = 2;
  c.ffn_hidden_size = 32;
  c.seq_length = 4;
  c.max_position_embeddings = 6;
  c.vocab_size = 300;
  c.padded_vocab_size = gpt::pad_vocab(300, tp);  // 384 at T=1, 512 at T=2
  return c;
}

// Stage pp of P (layers split evenly), tensor rank tp of T.
gpt::StageSpec stage(const gpt::ModelConfig& c, int T, int tp, int P, int pp) {
  gpt::StageSpec s;
  const int per = c.num_layers / P;
  s.first_layer = pp * per;
  s.num_layers = per;
  s.has_embedding = pp == 0;
  s.has_head = pp == P - 1;
  s.tp_size = T;
  s.tp_rank = tp;
  return s;
}

struct Full {
  std::vector<float> p, m, v;
};

Full random_full(size_t n, uint32_t seed) {
  return {gradcheck::randn(n, seed), gradcheck::randn(n, seed + 1), gradcheck::randn(n, seed + 2)};
}

// Every rank of (T, P, D) saves its shards of `full` (ranks in Megatron's order; the distributed
// optimizer's moments valid only on the rank's owned ranges, zeros elsewhere). Rank 0 saves last:
// it writes the index after the others' shards, as the barrier orders it in a real run.
void save_all(const std::string& dir, const gpt::ModelConfig& c, int T, int P, int D,
              const Full& full, int64_t iteration) {
  const gpt::ParamLayout whole(c);
  const int world = T * P * D;
  for (int rank = world - 1; rank >= 0; --rank) {
    const int tp = rank % T, dp = rank / T % D, pp = rank / (T * D);
    const gpt::ParamLayout l(c, stage(c, T, tp, P, pp));
    gpt::Checkpoint ck;
    ck.model = c;
    ck.state.iteration = iteration;
    ck.state.adam_step = 7;
    ck.arguments = "--test";
    for (auto [dst, src] : {std::pair{&ck.params, &full.p}, {&ck.adam_m, &full.m},
                            {&ck.adam_v, &full.v}}) {
      dst->resize(l.total());
      l.shard_of_full(whole, src->data(), dst->data());
    }
    gpt::SavePart part;
    part.rank = rank;
    part.world = world;
    part.owned = gpt::plan_buckets(l.total(), D, 40).owned(dp);
    std::vector<char> mine(l.total(), 0);
    for (auto [lo, hi] : part.owned)
      for (size_t i = lo; i < hi; ++i) mine[i] = 1;
    for (size_t i = 0; i < l.total(); ++i)
      if (!mine[i]) ck.adam_m[i] = ck.adam_v[i] = -1.0f;  // not this rank's: never written
    gpt::save_checkpoint(dir, ck, l, part, [](bool ok) { return ok; });
  }
}

// The T=1 model's tensors with the vocabulary rows of `to` (padding rows zero or dropped).
std::vector<float> repad(const std::vector<float>& src, const gpt::ModelConfig& from,
                         const gpt::ModelConfig& to) {
  const gpt::ParamLayout a(from), b(to);
  std::vector<float> out(b.total(), 0.0f);
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const auto &s = a.tensors()[i], &d = b.tensors()[i];
    std::copy_n(src.begin() + s.offset, std::min(s.numel, d.numel), out.begin() + d.offset);
  }
  return out;
}

}  // namespace

TEST_CASE("a (T=2, P=2, D=2) checkpoint holds the whole model's tensors") {
  const gpt::ModelConfig c2 = model(2);
  const gpt::ParamLayout whole(c2);
  const Full full = random_full(whole.total(), 11);
  train_test::TempDir dir("ckpt-layout-gather");
  save_all(dir / "ck", c2, 2, 2, 2, full, 5);
  CHECK(std::filesystem::exists(dir / "ck/iter_0000005/shard_7_of_8.bin"));
  const gpt::Checkpoint g = gpt::load_checkpoint(dir / "ck");
  CHECK(g.model.padded_vocab_size == 512);
  CHECK(g.state.iteration == 5);
  CHECK(g.state.adam_step == 7);
  CHECK(g.arguments == "--test");
  CHECK(g.params == full.p);
  CHECK(g.adam_m == full.m);
  CHECK(g.adam_v == full.v);

  // Loaded back at its own layout, each rank gets exactly its shards.
  for (int tp = 0; tp < 2; ++tp)
    for (int pp = 0; pp < 2; ++pp) {
      const gpt::ParamLayout l(c2, stage(c2, 2, tp, 2, pp));
      const gpt::Checkpoint r = gpt::load_checkpoint(dir / "ck", c2, l);
      std::vector<float> want(l.total());
      l.shard_of_full(whole, full.p.data(), want.data());
      CHECK(r.params == want);
      l.shard_of_full(whole, full.v.data(), want.data());
      CHECK(r.adam_v == want);
    }
}

TEST_CASE("a T=1 checkpoint loads at T=2 (vocabulary padded) and back at T=1 unchanged") {
  const gpt::ModelConfig c1 = model(1), c2 = model(2);
  const gpt::ParamLayout w1(c1), w2(c2);
  const Full full = random_full(w1.total(), 21);
  train_test::TempDir dir("ckpt-layout-repad");
  save_all(dir / "t1", c1, 1, 1, 1, full, 3);

  // At T=2 (pipeline 2): the T=1 tensors, the 128 new vocabulary rows zero.
  const std::vector<float> p2 = repad(full.p, c1, c2), m2 = repad(full.m, c1, c2),
                           v2 = repad(full.v, c1, c2);
  Full at2{std::vector<float>(w2.total()), std::vector<float>(w2.total()),
           std::vector<float>(w2.total())};
  for (int tp = 0; tp < 2; ++tp)
    for (int pp = 0; pp < 2; ++pp) {
      const gpt::ParamLayout l(c2, stage(c2, 2, tp, 2, pp));
      const gpt::Checkpoint r = gpt::load_checkpoint(dir / "t1", c2, l);
      CHECK(r.model.padded_vocab_size == 384);
      std::vector<float> want(l.total());
      l.shard_of_full(w2, p2.data(), want.data());
      CHECK(r.params == want);
      l.shard_of_full(w2, m2.data(), want.data());
      CHECK(r.adam_m == want);
      l.unshard_into_full(w2, r.params.data(), at2.p.data());
      l.unshard_into_full(w2, r.adam_m.data(), at2.m.data());
      l.unshard_into_full(w2, r.adam_v.data(), at2.v.data());
    }
  CHECK(at2.v == v2);

  // Saved from (T=2, P=2, D=2) and loaded at T=1: the original tensors, bit for bit.
  save_all(dir / "t2", c2, 2, 2, 2, at2, 4);
  const gpt::Checkpoint back = gpt::load_checkpoint(dir / "t2", c1, w1);
  CHECK(back.params == full.p);
  CHECK(back.adam_m == full.m);
  CHECK(back.adam_v == full.v);
  CHECK(gpt::load_checkpoint(dir / "t2").model.padded_vocab_size == 512);
}

TEST_CASE("loading at another layout still refuses another model shape") {
  const gpt::ModelConfig c1 = model(1);
  train_test::TempDir dir("ckpt-layout-refuse");
  save_all(dir / "ck", c1, 1, 1, 1, random_full(gpt::ParamLayout(c1).total(), 5), 1);
  gpt::ModelConfig other = model(2);
  other.hidden_size = 16;
  const gpt::ParamLayout l(other, stage(other, 2, 0, 1, 0));
  CHECK_THROWS_WITH_AS(gpt::load_checkpoint(dir / "ck", other, l),
                       doctest::Contains("--hidden-size: checkpoint 8, this run 16"),
                       suite::ToolError);
  // A missing shard is named, not read as zeros.
  save_all(dir / "two", model(2), 2, 1, 1, random_full(gpt::ParamLayout(model(2)).total(), 6), 2);
  std::filesystem::remove(dir / "two/iter_0000002/shard_1_of_2.bin");
  std::string error;
  try {
    gpt::load_checkpoint(dir / "two");
  } catch (const suite::ToolError& e) {
    error = suite::format_error(e);
  }
  CHECK(error.find("shard_1_of_2.bin") != std::string::npos);
  CHECK(error.find("checkpoint file is missing") != std::string::npos);
}

TEST_CASE("--export-hf from a (T=2, P=2, D=2) checkpoint: the whole model's weights") {
  const gpt::ModelConfig c1 = model(1), c2 = model(2);
  const Full full = random_full(gpt::ParamLayout(c2).total(), 31);
  train_test::TempDir dir("ckpt-layout-hf");
  save_all(dir / "ck", c2, 2, 2, 2, full, 9);
  gpt::export_hf_from_checkpoint(dir / "ck", dir / "hf");
  const gpt::ParamLayout w1(c1);
  std::vector<float> got(w1.total());
  gpt::load_hf(dir / "hf", c1, w1, got.data());  // padding rows zero
  std::vector<float> want = repad(full.p, c2, c1);
  std::fill(want.begin() + long(w1.wte() + 300 * 8), want.begin() + long(w1.wte() + 384 * 8), 0.0f);
  CHECK(got == want);
}

TEST_CASE("ranks holding several model chunks (interleaved, T=2, P=2, 2 chunks) save the whole model") {
  const gpt::ModelConfig c2 = model(2);
  const gpt::ParamLayout whole(c2);
  const Full full = random_full(whole.total(), 41);
  train_test::TempDir dir("ckpt-layout-chunks");
  // Chunk k of stage pp holds layer k·P + pp; the first chunk of stage 0 the embedding, the last
  // chunk of the last stage the head (and the tied embedding's copy).
  for (int rank = 3; rank >= 0; --rank) {
    const int tp = rank % 2, pp = rank / 2;
    std::vector<gpt::ParamLayout> layouts;
    for (int k = 0; k < 2; ++k) {
      gpt::StageSpec s = stage(c2, 2, tp, 4, k * 2 + pp);
      layouts.emplace_back(c2, s);
    }
    std::vector<Full> local(2);
    std::vector<gpt::SaveChunk> chunks(2);
    for (int k = 0; k < 2; ++k) {
      for (auto [dst, src] : {std::pair{&local[k].p, &full.p}, {&local[k].m, &full.m},
                              {&local[k].v, &full.v}}) {
        dst->resize(layouts[k].total());
        layouts[k].shard_of_full(whole, src->data(), dst->data());
      }
      chunks[k] = {&layouts[k], local[k].p.data(), local[k].m.data(), local[k].v.data(), {}};
    }
    gpt::Checkpoint meta;
    meta.model = c2;
    meta.state.iteration = 8;
    gpt::save_checkpoint(dir / "ck", meta, chunks, rank, 4, [](bool ok) { return ok; });
  }
  const gpt::Checkpoint g = gpt::load_checkpoint(dir / "ck");
  CHECK(g.params == full.p);
  CHECK(g.adam_m == full.m);
  CHECK(g.adam_v == full.v);
}
