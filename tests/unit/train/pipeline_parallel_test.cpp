// The trainer's side of tensor/pipeline parallelism: each rank's stage from the layout, the
// gradients it counts in the world's norm (every gradient of the model exactly once), the slots
// its backend needs, and the layout flags as parsed.
#include <doctest/doctest.h>

#include <map>

#include "common/cli/error.h"
#include "tests/unit/train/train_helpers.h"
#include "train/loop/pipeline_parallel.h"

using namespace gpt;

namespace {

ModelConfig tiny_model() {
  ModelConfig c;
  c.num_layers = 4;
  c.hidden_size = 16;
  c.num_heads = 2;
  c.ffn_hidden_size = 64;
  c.seq_length = 8;
  c.max_position_embeddings = 8;
  c.vocab_size = 300;
  c.padded_vocab_size = pad_vocab(300, 2);
  return c;
}

}  // namespace

TEST_CASE("pipeline parallel: stages, and the norm counts every global element once") {
  const ModelConfig cfg = tiny_model();
  dist::LayoutFlags f;
  f.tensor = 2;
  f.pipeline = 3;
  f.partition = "0-4-0";
  ModelParallelEnv mp;
  mp.layout = dist::resolve_layout(f, 4, 2, 64, 8, 6);
  // Counted elements per global tensor, over every rank of the world.
  std::map<int, size_t> counted;
  for (int rank = 0; rank < 6; ++rank) {
    mp.coord = mp.layout.coord(rank);
    const StageSpec st = mp.stage();
    CHECK(st.has_embedding == (mp.coord.pp == 0));
    CHECK(st.has_head == (mp.coord.pp == 2));
    CHECK(st.num_layers == (mp.coord.pp == 1 ? 4 : 0));
    CHECK(st.tp_rank == mp.coord.tp);
    const ParamLayout layout(cfg, st);
    const auto ranges = norm_ranges(layout);
    for (size_t i = 1; i < ranges.size(); ++i) CHECK(ranges[i - 1].second < ranges[i].first);
    for (const TensorInfo& t : layout.tensors())
      for (const auto& [lo, hi] : ranges)
        if (lo <= t.offset && t.offset + t.numel <= hi) counted[t.global_index] += t.numel;
  }
  const ParamLayout whole(cfg);
  REQUIRE(counted.size() == whole.tensors().size());
  for (size_t i = 0; i < whole.tensors().size(); ++i) {
    CAPTURE(whole.tensors()[i].name);
    CHECK(counted[int(i)] == whole.tensors()[i].numel);
  }
}

TEST_CASE("pipeline parallel: backend slots are the schedule's micro-batches in flight") {
  dist::LayoutFlags f;
  f.pipeline = 4;
  const auto l = dist::resolve_layout(f, 8, 2, 64, 8, 4);
  CHECK(PipelineParallel::slots(l, 0, 8) == 4);
  CHECK(PipelineParallel::slots(l, 3, 8) == 1);
  CHECK(PipelineParallel::slots(l, 0, 2) == 2);
  f.pipeline = 1;
  CHECK(PipelineParallel::slots(dist::resolve_layout(f, 8, 2, 64, 8, 1), 0, 8) == 1);
}

TEST_CASE("pipeline parallel: the layout flags as parsed, and checked against the world size") {
  auto a = train_test::parse(train_test::tiny_flags(
      {"--num-layers", "4", "--pipeline-model-parallel-size", "2", "--pipeline-model-parallel-layout",
       "Et*3|tL", "--tensor-model-parallel-size", "2", "--train-iters", "2"}));
  CHECK(a.layout.stage_layers == std::vector<int>{3, 1});
  CHECK(a.tensor_parallel == 2);
  apply_world_size(a, 8);
  CHECK(a.layout.data == 2);
  CHECK(a.data_parallel_size == 2);
  CHECK_THROWS_WITH_AS(apply_world_size(a, 6),
                       "world size 6 is not a multiple of --tensor-model-parallel-size 2 x "
                       "--pipeline-model-parallel-size 2 (= 4)",
                       suite::UsageError);
}
