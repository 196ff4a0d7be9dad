// gpt-plan's library (train/plan/): the known answers of the layout search (even partitions for
// identical GPUs, P = 1 with unlimited memory, fewer layers beside an expensive output layer and on
// a slower GPU type), the 1F1B formula, the memory model against gpt-launch estimate's, and the
// profile and cluster files with their errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "common/cli/error.h"
#include "train/launch/memory.h"
#include "train/plan/bandwidth.h"
#include "train/plan/cluster_spec.h"
#include "train/plan/gpu_profile.h"
#include "train/plan/partition.h"
#include "train/plan/plan_job.h"
#include "train/plan/planner.h"
#include "train/plan/stage_memory.h"

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

plan::ModelShape shape(int layers = 24, int hidden = 256, int heads = 8) {
  plan::ModelShape m;
  m.name = "test";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.ffn = 4 * hidden;
  m.seq = m.max_positions = 256;
  return m;
}

// A measured profile with a layer of `layer_ms` (forward a third, backward two thirds) and the
// embedding and output layer as given, at micro-batch sizes 1 and 2 (twice the time).
plan::GpuProfile profile(const std::string& gpu, double layer_ms, double emb_ms = 0, double head_ms = 0) {
  std::vector<plan::ProfileEntry> entries;
  for (int b : {1, 2}) {
    plan::ProfileEntry e;
    e.micro_batch = b;
    e.layer = {b * layer_ms / 3, b * layer_ms * 2 / 3};
    e.embedding = {b * emb_ms / 3, b * emb_ms * 2 / 3};
    e.head = {b * head_ms / 3, b * head_ms * 2 / 3};
    entries.push_back(e);
  }
  return plan::GpuProfile::measured(gpu, "test", entries);
}

plan::NodeGroup group(const std::string& gpu, int nodes, int gpus, double gbs = kInf) {
  plan::NodeGroup g;
  g.gpu = gpu;
  g.nodes = nodes;
  g.gpus_per_node = gpus;
  g.intra_gbs = g.inter_gbs = g.p2p_intra_gbs = g.p2p_inter_gbs = gbs;
  return g;
}

plan::PlanInputs inputs(std::vector<plan::NodeGroup> groups, std::vector<plan::GpuProfile> profiles, double memory_gib = 1e6,
                        int global_batch = 16) {
  plan::PlanInputs in;
  in.model = shape();
  in.cluster.path = "test.yaml";
  in.cluster.groups = std::move(groups);
  in.profiles = std::move(profiles);
  in.memory_gib.assign(in.cluster.groups.size(), memory_gib);
  in.global_batch = global_batch;
  return in;
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("plan: 1F1B pipeline time of equal stages is (m + P - 1) x stage time") {
  std::vector<plan::StageSpeed> st(4, plan::StageSpeed{1.0, 0, 0, 100});
  CHECK(plan::pipeline_ms(st, {3, 3, 3, 3}, 8) == doctest::Approx((8 + 4 - 1) * 3.0));
  CHECK(plan::even_partition(4, 12) == std::vector<int>{3, 3, 3, 3});
  CHECK(plan::even_partition(4, 10).empty());
  CHECK(plan::parse_partition("0-11-8-8-8-8-5-0") == std::vector<int>{0, 11, 8, 8, 8, 8, 5, 0});
  CHECK_THROWS_AS(plan::parse_partition("4--4"), suite::UsageError);
  CHECK_THROWS_AS(plan::parse_partition("4-x"), suite::UsageError);
}

TEST_CASE("plan: identical GPUs, free communication, free embedding and head: the even partition for each P") {
  plan::PlanInputs in = inputs({group("X", 1, 8)}, {profile("X", 1.0)});
  for (int P : {1, 2, 4, 8}) {
    plan::SearchOptions o;
    o.pp = {P};
    const plan::SearchResult r = plan::search(in, o);
    REQUIRE(!r.ranked.empty());
    CHECK(r.ranked.front().layout.partition == std::vector<int>(P, 24 / P));
  }
  // The partition search alone, at stage counts that do not divide the layers: no two stages
  // differ by more than one layer, and no end stage is left empty.
  for (int P : {3, 5, 7, 9}) {
    std::vector<plan::StageSpeed> st(P, plan::StageSpeed{1.0, 0, 0, 100});
    const std::vector<int> k = plan::balanced_partition(st, 24, 16);
    REQUIRE(int(k.size()) == P);
    CHECK(std::accumulate(k.begin(), k.end(), 0) == 24);
    CHECK(*std::max_element(k.begin(), k.end()) - *std::min_element(k.begin(), k.end()) <= 1);
  }
}

TEST_CASE("plan: with unlimited memory and free communication P = 1 and the largest D win") {
  plan::PlanInputs in = inputs({group("X", 2, 4)}, {profile("X", 1.0, 0.2, 0.5)});
  const plan::SearchResult r = plan::search(in, {});
  REQUIRE(!r.ranked.empty());
  CHECK(r.ranked.front().layout.pp == 1);
  CHECK(r.ranked.front().layout.dp == 8);
  CHECK(r.ranked.front().bubble == doctest::Approx(0));
}

TEST_CASE("plan: an output layer costing k layers leaves the last stage about k fewer layers") {
  for (int k : {2, 4}) {
    plan::PlanInputs in = inputs({group("X", 1, 4)}, {profile("X", 1.0, 0, k * 1.0)});
    plan::SearchOptions o;
    o.pp = {4};
    const plan::SearchResult r = plan::search(in, o);
    REQUIRE(!r.ranked.empty());
    const std::vector<int>& part = r.ranked.front().layout.partition;
    INFO("partition ", part[0], "-", part[1], "-", part[2], "-", part[3]);
    CHECK(std::abs(part[0] - part[3] - k) <= 1);
  }
}

TEST_CASE("plan: a slower GPU type receives fewer layers, in either order along the pipeline") {
  plan::PlanInputs in = inputs({group("fast", 1, 4), group("slow", 1, 4)}, {profile("fast", 1.0), profile("slow", 2.0)});
  plan::SearchOptions o;
  o.pp = {2};
  o.micro_batch = {1};
  const plan::SearchResult r = plan::search(in, o);
  REQUIRE(r.ranked.size() >= 2);
  for (const plan::Prediction& p : r.ranked) {
    const int fast = p.stages[0].gpu == "fast" ? 0 : 1;
    CHECK(p.layout.partition[fast] == 16);
    CHECK(p.layout.partition[1 - fast] == 8);
  }
}

TEST_CASE("plan: communication terms: ring all-reduce over D, the embedding between the end stages") {
  plan::PlanInputs in = inputs({group("X", 2, 4, 10)}, {profile("X", 1.0)});
  plan::Layout l;
  l.tp = 1;
  l.pp = 2;
  l.dp = 4;
  l.micro_batch = 1;
  l.partition = {12, 12};
  const plan::Prediction p = plan::predict(in, l);
  REQUIRE(p.fits);
  const double first = 12 * in.model.layer_params() + in.model.embedding_params(1);
  CHECK(p.stages[0].dp_ms == doctest::Approx(2.0 * 3 / 4 * first * 4 / 10e6));
  CHECK(p.embedding_ms == doctest::Approx(double(in.model.padded_vocab(1)) * in.model.hidden * 4 / 10e6));
  CHECK(p.stages[0].p2p_ms == doctest::Approx(2 * in.model.activation_bytes(1) / 10e6));
  CHECK(p.step_ms == doctest::Approx(p.pipeline_ms + p.dp_ms + p.embedding_ms + p.optimizer_ms));
  l.distributed_optimizer = true;
  const plan::Prediction d = plan::predict(in, l);
  CHECK(d.stages[0].memory.optimizer == doctest::Approx(p.stages[0].memory.optimizer / 4));
  // The distributed optimizer: a reduce-scatter of the fp32 gradients and an all-gather of the
  // fp32 master pieces, each at its own measured bus bandwidth.
  in.cluster.groups[0].intra_reduce_scatter_gbs = 5;
  in.cluster.groups[0].intra_all_gather_gbs = 8;
  const plan::Prediction r = plan::predict(in, l);
  CHECK(r.stages[0].dp_ms == doctest::Approx(3.0 / 4 * first * 4 / 5e6 + 3.0 / 4 * first * 4 / 8e6));
}

TEST_CASE("plan: stage memory is gpt-launch estimate's buffer plan") {
  // GPT-2 124M (head size 64), and GPT-3 XL's shape at sequence 2048 (head size 128: the flash
  // kernels' lse, not a [B,NH,T,T] att per layer).
  for (const auto& [layers, hidden, heads, seq] :
       {std::tuple{12, 768, 12, 1024}, std::tuple{4, 2048, 16, 2048}}) {
    CAPTURE(hidden / heads);
    launch::Preset p;
    p.name = "t";
    p.train = {{"num-layers", std::to_string(layers)}, {"hidden-size", std::to_string(hidden)},
               {"num-attention-heads", std::to_string(heads)}, {"seq-length", std::to_string(seq)},
               {"micro-batch-size", "4"}, {"global-batch-size", "32"}, {"bf16", "true"},
               {"hidden-dropout", "0.1"}};  // accumulation: the masters' low halves a buffer of their own
    const launch::MemoryEstimate e = launch::estimate_memory(p, 1, 1, 1);
    plan::ModelShape m = shape(layers, hidden, heads);
    m.seq = m.max_positions = seq;
    const plan::MemoryParts s = plan::StageMemory(m, 4, 1, false).stage(layers, 1, 1);
    CHECK(s.weights == doctest::Approx(e.weights));
    CHECK(s.gradients == doctest::Approx(e.gradients));
    CHECK(s.optimizer == doctest::Approx(e.optimizer));
    CHECK(s.activations == doctest::Approx(e.activations));
    CHECK(s.workspace == doctest::Approx(e.workspace));
    const plan::MemoryParts r = plan::StageMemory(m, 4, 1, true).stage(layers, 1, 1);
    CHECK(r.activations == doctest::Approx(e.activations_recompute));
  }
}

TEST_CASE("plan: a model that fits nowhere is rejected with the memory it lacks") {
  plan::PlanInputs in = inputs({group("X", 1, 2)}, {profile("X", 1.0)}, 0.01);
  const plan::SearchResult r = plan::search(in, {});
  CHECK(r.ranked.empty());
  CHECK(r.example_rejection.find("does not fit in memory") != std::string::npos);
}

TEST_CASE("plan: the model from a shape, a preset's shape flags, or the flags alone") {
  plan::ShapeFlags f;
  const plan::ModelShape a = plan::load_model_shape("24x1024x16", "presets", f);
  CHECK(a.layers == 24);
  CHECK(a.ffn == 4096);
  CHECK(a.seq == 1024);
  f.num_layers = 12;
  f.seq_length = 512;
  const plan::ModelShape b = plan::load_model_shape("24x1024x16", "presets", f);
  CHECK(b.layers == 12);
  CHECK(b.seq == 512);
  f.hidden_size = 768;
  f.num_attention_heads = 12;
  const plan::ModelShape c = plan::load_model_shape("", "presets", f);
  CHECK(c.hidden == 768);
  CHECK(c.ffn == 3072);
  CHECK(c.total_params() == doctest::Approx(12 * (12.0 * 768 * 768 + 13 * 768) + (50304.0 + 512) * 768 + 2 * 768));
  f.num_attention_heads = 7;
  CHECK_THROWS_AS(plan::load_model_shape("", "presets", f), suite::UsageError);  // 768 % 7
  CHECK_THROWS_AS(plan::load_model_shape("", "presets", plan::ShapeFlags{}), suite::UsageError);
}

TEST_CASE("plan: analytic profiles scale with the published speeds") {
  const plan::ModelShape m = shape(48, 1600, 25);
  const auto a100 = plan::GpuProfile::from_spec(*plan::find_gpu_spec("a100-40gb"), 0.5).entry(m, 1, 1);
  const auto a10 = plan::GpuProfile::from_spec(*plan::find_gpu_spec("A10"), 0.5).entry(m, 1, 1);
  REQUIRE(a100);
  REQUIRE(a10);
  CHECK(a10->layer.forward_ms / a100->layer.forward_ms == doctest::Approx(2.5).epsilon(0.1));
  CHECK(a100->layer.backward_ms == doctest::Approx(2 * a100->layer.forward_ms));
  CHECK(plan::find_gpu_spec("B300") == nullptr);
}

TEST_CASE("plan: profile files: read, checked against the model, errors name the file") {
  const plan::ModelShape m = shape();
  const std::string good = write("plan_profile_good.json", R"({"format":"gpt-layer-profile","version":1,"gpu":"A10",
    "model":{"hidden-size":256,"num-attention-heads":8,"ffn-hidden-size":1024,"seq-length":256,"vocab-size":50257,"precision":"bf16"},
    "entries":[{"micro-batch-size":2,"tensor-model-parallel-size":1,
      "embedding":{"forward-ms":0.1,"backward-ms":0.2},"layer":{"forward-ms":1,"backward-ms":2},
      "output-layer":{"forward-ms":3,"backward-ms":6},"layer-activation-bytes":1000000}]})");
  const plan::GpuProfile p = plan::load_profile(good, m);
  CHECK(p.gpu == "A10");
  REQUIRE(p.entry(m, 2, 1));
  CHECK(p.entry(m, 2, 1)->head.backward_ms == 6);
  CHECK(p.entry(m, 2, 1)->layer_activation_bytes == 1e6);
  CHECK(!p.entry(m, 1, 1));
  CHECK(p.micro_batches(1, 64) == std::vector<int>{2});
  const std::string other = write("plan_profile_other.json", R"({"format":"gpt-layer-profile","gpu":"A10",
    "model":{"hidden-size":512,"num-attention-heads":8,"ffn-hidden-size":1024,"seq-length":256,"vocab-size":50257},
    "entries":[]})");
  try {
    plan::load_profile(other, m);
    FAIL("no error");
  } catch (const suite::ToolError& e) {
    CHECK(e.where() == other);
    CHECK(std::string(e.what()).find("hidden-size 512") != std::string::npos);
  }
  CHECK_THROWS_AS(plan::load_profile(write("plan_profile_bad.json", "{\"format\": 3"), m), suite::ToolError);
}

TEST_CASE("plan: cluster files: groups, measured bandwidths, errors with file and line") {
  const std::string bw = write("plan_bw.json", R"({"format":"gpt-plan-bandwidth","version":1,"communicator":"nccl","ranks":8,
    "nodes":1,"results":[],"summary":{"scope":"intra-node","all-reduce-bus-gbs":300,"reduce-scatter-bus-gbs":280,
    "all-gather-bus-gbs":290,"p2p-intra-node-gbs":150,"p2p-inter-node-gbs":0}})");
  const std::string c = write("plan_cluster.yaml", "groups:\n  - gpu: H100\n    nodes: 2\n    gpus-per-node: 8\n"
                                                   "    inter-node-gbs: 25\n    bandwidth-files: [" + bw + "]\n"
                                                   "    price-per-hour: 98\n");
  const plan::ClusterSpec s = plan::load_cluster_spec(c);
  REQUIRE(s.groups.size() == 1);
  CHECK(s.groups[0].intra_gbs == 300);
  CHECK(s.groups[0].p2p_intra_gbs == 150);
  CHECK(s.groups[0].intra_reduce_scatter_gbs == 280);
  CHECK(s.groups[0].intra_all_gather_gbs == 290);
  CHECK(s.groups[0].inter_gbs == 25);
  CHECK(s.priced());
  CHECK(s.gpus() == 16);
  const std::string typo = write("plan_cluster_typo.yaml", "groups:\n  - gpu: H100\n    nodes: 2\n    gpu-per-node: 8\n");
  try {
    plan::load_cluster_spec(typo);
    FAIL("no error");
  } catch (const suite::ToolError& e) {
    CHECK(std::string(e.what()).find(typo + ":4: unknown field 'gpu-per-node'") != std::string::npos);
  }
  const std::string slow = write("plan_cluster_nobw.yaml", "groups:\n  - gpu: H100\n    nodes: 2\n    gpus-per-node: 8\n"
                                                           "    intra-node-gbs: 300\n");
  CHECK_THROWS_WITH_AS(plan::load_cluster_spec(slow), doctest::Contains("needs inter-node-gbs"), suite::ToolError);
}

TEST_CASE("plan: inputs: an unknown GPU type and a missing profile are named") {
  const std::string c = write("plan_cluster_types.yaml", "groups:\n  - gpu: A10\n    nodes: 1\n    gpus-per-node: 4\n"
                                                         "    intra-node-gbs: 10\n    inter-node-gbs: 5\n"
                                                         "  - gpu: B300\n    nodes: 1\n    gpus-per-node: 4\n"
                                                         "    intra-node-gbs: 10\n    inter-node-gbs: 5\n");
  plan::PlanOptions o;
  o.model = "24x256x8";
  o.cluster = c;
  o.global_batch = 16;
  CHECK_THROWS_WITH_AS(plan::make_inputs(o), doctest::Contains("no profile for GPU type 'A10'"), suite::ToolError);
  o.analytic = true;
  CHECK_THROWS_WITH_AS(plan::make_inputs(o), doctest::Contains("unknown GPU type 'B300'"), suite::ToolError);
}

TEST_CASE("bandwidth --sizes: bytes with an optional K, M or G (powers of 1024)") {
  CHECK(plan::parse_size("4096", "--sizes") == 4096);
  CHECK(plan::parse_size("64K", "--sizes") == 65536);
  CHECK(plan::parse_size("64k", "--sizes") == 65536);
  CHECK(plan::parse_size("1.5M", "--sizes") == 1572864);
  CHECK(plan::parse_size("1G", "--sizes") == 1073741824);
  for (const char* bad : {"", "K", "12KB", "0", "-1M", "2T", " 4K", "1e20"})
    CHECK_THROWS_WITH_AS(plan::parse_size(bad, "--sizes"),
                         doctest::Contains("--sizes must be a size such as 4096, 64K, 16M or 1G"),
                         suite::UsageError);
}
