// The tensor × data × pipeline layout: Megatron's rank order and groups, every spelling of the
// stages' layers converging on one list, and the usage errors naming the flags.
#include <doctest/doctest.h>

#include "common/cli/error.h"
#include "train/dist/parallel_layout.h"

using namespace gpt::dist;

namespace {

ParallelLayout resolve(const LayoutFlags& f, int layers = 48, int world = 0, int heads = 16) {
  return resolve_layout(f, layers, heads, 4 * 64, 64, world);
}

std::string error_of(const LayoutFlags& f, int layers = 48, int world = 0, int heads = 16) {
  try {
    resolve(f, layers, world, heads);
  } catch (const suite::UsageError& e) {
    return e.what();
  }
  return "";
}

LayoutFlags pp(int P) {
  LayoutFlags f;
  f.pipeline = P;
  return f;
}

}  // namespace

TEST_CASE("parallel layout: Megatron's rank order and groups (16 ranks, T=2, P=4)") {
  LayoutFlags f;
  f.tensor = 2;
  f.pipeline = 4;
  ParallelLayout l = resolve(f, 8, 16);
  CHECK(l.data == 2);
  CHECK(l.coord(0) == RankCoord{0, 0, 0});
  CHECK(l.coord(3) == RankCoord{1, 1, 0});
  CHECK(l.coord(13) == RankCoord{1, 0, 3});
  for (int r = 0; r < 16; ++r) CHECK(l.rank_of(l.coord(r)) == r);
  CHECK(l.tensor_group(3) == std::vector<int>{2, 3});
  CHECK(l.data_group(1) == std::vector<int>{1, 3});
  CHECK(l.data_group(4) == std::vector<int>{4, 6});
  CHECK(l.pipeline_group(1) == std::vector<int>{1, 5, 9, 13});
  CHECK(l.embedding_group(13) == std::vector<int>{1, 13});
  CHECK(l.embedding_group(9) == std::vector<int>{9});  // a middle stage
  CHECK(l.coord_text(13) == "(tp 1, dp 0, pp 3)");
  auto lines = l.describe();
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "> initializing tensor model parallel with size 2");
  CHECK(lines[1] == "> initializing pipeline model parallel with size 4");
  CHECK(lines[2] == "> initializing data parallel with size 2");
  CHECK(lines[3] == "> transformer layers per pipeline stage: 2-2-2-2");
}

TEST_CASE("parallel layout: every spelling of GPT-2 XL's 0-11-8-8-8-8-5-0 gives one list") {
  const std::vector<int> want{0, 11, 8, 8, 8, 8, 5, 0};
  LayoutFlags a = pp(8), b = pp(8), c = pp(8), d = pp(8);
  a.partition = "0-11-8-8-8-8-5-0";
  b.balance = "1-11-8-8-8-8-5-1";  // FASOP's L+2 units
  c.balance = "[0, 11, 8, 8, 8, 8, 5, 0]";
  d.layout = "E|t*11|(t*8|)*4,t*5|L";
  for (const auto& f : {a, b, c, d}) {
    ParallelLayout l = resolve(f, 48, 32);
    CHECK(l.stage_layers == want);
    CHECK(l.virtual_stages == 1);
    CHECK(l.data == 4);
    CHECK(l.partition_text() == "0-11-8-8-8-8-5-0");
    CHECK(l.first_layer(2) == 11);
    CHECK(l.num_layers(6) == 5);
  }
  LayoutFlags e = pp(4);
  e.first_stage_layers = 3;
  e.last_stage_layers = 1;
  CHECK(resolve(e, 12).stage_layers == std::vector<int>{3, 4, 4, 1});
  e.last_stage_layers = -1;
  CHECK(resolve(e, 12).stage_layers == std::vector<int>{3, 3, 3, 3});
  CHECK(resolve(pp(3), 12).stage_layers == std::vector<int>{4, 4, 4});
  LayoutFlags z = pp(3);
  z.partition = "0-4-0";
  CHECK(resolve(z, 4).stage_layers == std::vector<int>{0, 4, 0});
}

TEST_CASE("parallel layout: the interleaved schedule's round-robin chunks") {
  LayoutFlags f = pp(3);
  f.layers_per_virtual_stage = 2;
  ParallelLayout l = resolve(f, 12);
  CHECK(l.virtual_stages == 2);
  // Rank 0 holds layers [0,1] and [6,7] (round robin over the model chunks).
  CHECK(l.first_layer(0, 0) == 0);
  CHECK(l.first_layer(0, 1) == 6);
  CHECK(l.first_layer(1, 0) == 2);
  CHECK(l.first_layer(2, 1) == 10);
  CHECK(l.partition_text() == "4-4-4");
  LayoutFlags m = pp(3);
  m.layout = "Et|t|t|t|t|tL";
  ParallelLayout k = resolve(m, 6);
  CHECK(k.virtual_stages == 2);
  CHECK(k.first_layer(1, 1) == 4);
  LayoutFlags two = pp(2);
  two.layers_per_virtual_stage = 1;
  CHECK_THROWS_WITH_AS(resolve(two, 4),
                       "--num-layers-per-virtual-pipeline-stage needs "
                       "--pipeline-model-parallel-size > 2 (the interleaved schedule)",
                       suite::UsageError);
}

TEST_CASE("parallel layout: errors name the flags") {
  LayoutFlags t;
  t.tensor = 3;
  CHECK(error_of(t, 48, 0, 4) == "--tensor-model-parallel-size 3 does not divide "
                                 "--num-attention-heads 4");
  LayoutFlags p = pp(8);
  p.partition = "0-11-8-8-8-8-4-0";
  CHECK(error_of(p) == "--pipeline-partition sums to 47, --num-layers is 48");
  p.partition = "11-8-8-8-8-5";
  CHECK(error_of(p) == "--pipeline-partition has 6 stages, --pipeline-model-parallel-size is 8");
  p.partition = "0-11-8-0-8-8-13-0";
  CHECK(error_of(p).find("stage 3 has no layers") != std::string::npos);
  p.partition = "0-11-8x";
  CHECK(error_of(p).find("--pipeline-partition '0-11-8x': unexpected 'x'") == 0);
  CHECK(error_of(pp(51)) == "--pipeline-model-parallel-size 51 is more than --num-layers 48 + 2 "
                            "(every stage needs a layer, but for an empty first and last stage)");
  CHECK(error_of(pp(5)).find("--num-layers 48 is not a multiple of "
                             "--pipeline-model-parallel-size 5") == 0);
  LayoutFlags w;
  w.tensor = 2;
  w.pipeline = 2;
  CHECK(error_of(w, 48, 6) == "world size 6 is not a multiple of --tensor-model-parallel-size 2 "
                              "x --pipeline-model-parallel-size 2 (= 4)");
  LayoutFlags two = pp(8);
  two.partition = "0-11-8-8-8-8-5-0";
  two.layout = "E|t*48|L";
  CHECK(error_of(two) == "--pipeline-partition and --pipeline-model-parallel-layout both give "
                         "the stages' layers: give one");
  LayoutFlags v = pp(8);
  v.partition = "0-11-8-8-8-8-5-0";
  v.layers_per_virtual_stage = 2;
  CHECK(error_of(v).find("--num-layers-per-virtual-pipeline-stage needs equal stages") == 0);
  LayoutFlags lay = pp(2);
  lay.layout = "t*4|E|L";
  CHECK(error_of(lay, 4).find("E (the embedding) must open the first stage") !=
        std::string::npos);
  lay.layout = "Et*2|tL";
  CHECK(error_of(lay, 4) == "--pipeline-model-parallel-layout has 3 transformer layers, "
                            "--num-layers is 4");
  LayoutFlags fl = pp(4);
  fl.first_stage_layers = 3;
  CHECK(error_of(fl, 10).find("leave 7 layers, which do not split evenly over the 3 other "
                              "stages") != std::string::npos);
  LayoutFlags sp;
  sp.tensor = 2;
  sp.sequence_parallel = true;
  CHECK_THROWS_WITH_AS(resolve_layout(sp, 4, 4, 64, 63, 0),
                       "--sequence-parallel: --tensor-model-parallel-size 2 does not divide "
                       "--seq-length 63",
                       suite::UsageError);
  CHECK(resolve_layout(sp, 4, 4, 64, 64, 0).sequence_parallel);
  sp.tensor = 1;
  CHECK_FALSE(resolve_layout(sp, 4, 4, 64, 63, 0).sequence_parallel);  // forced off at T=1
}
