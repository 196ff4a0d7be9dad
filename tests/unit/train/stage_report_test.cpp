#include "train/loop/stage_report.h"

#include <doctest/doctest.h>

#include <vector>

using namespace gpt;

namespace {

// The summed exchange vector of ranks whose figures are given (rank r at slot r).
std::vector<double> exchange(const std::vector<StageFigures>& ranks, int64_t iterations) {
  std::vector<double> sum(ranks.size() * kStageFields, 0.0);
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::vector<double> v = stage_exchange(ranks[r], int(r), int(ranks.size()), iterations);
    for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
  }
  return sum;
}

StageFigures figures(int stage, int first, int layers, double params, double mb, double fwd,
                     double bwd, int64_t passes) {
  StageFigures f;
  f.stage = stage;
  f.first_layer = first;
  f.num_layers = layers;
  f.embedding = stage == 0;
  f.head = false;
  f.parameters = params;
  f.max_allocated_mb = mb;
  f.passes.forward_ms = fwd;
  f.passes.backward_ms = bwd;
  f.passes.forwards = f.passes.backwards = passes;
  return f;
}

}  // namespace

TEST_CASE("stage report: the bubble is 1 - sum of stage compute / (P x step)") {
  CHECK(measured_bubble({30, 50}, 100) == doctest::Approx(0.6));
  CHECK(measured_bubble({100, 100}, 100) == doctest::Approx(0.0));
  CHECK(measured_bubble({150, 100}, 100) == 0.0);  // clamped
  CHECK(measured_bubble({}, 100) == 0.0);
  CHECK(measured_bubble({10}, 0) == 0.0);
}

TEST_CASE("stage report: T=2, P=2, D=2 ranks in Megatron's order aggregate per stage") {
  // rank = tp + 2·(dp + 2·pp); 2 iterations of 4 micro-batches: 8 passes of each kind.
  std::vector<StageFigures> ranks;
  for (int pp = 0; pp < 2; ++pp)
    for (int dp = 0; dp < 2; ++dp)
      for (int tp = 0; tp < 2; ++tp)
        ranks.push_back(figures(pp, pp == 0 ? 0 : 5, pp == 0 ? 5 : 3, 1000 + 100 * pp,
                                100 + 10 * tp + 20 * dp + 300 * pp, 8 * (1 + dp), 16 * (1 + dp),
                                8));
  ranks.back().head = true;
  const StageReport r = stage_report(exchange(ranks, 2), 2, 2, 50.0, 4);
  REQUIRE(r.stages.size() == 2);
  CHECK(r.stages[0].first_layer == 0);
  CHECK(r.stages[0].num_layers == 5);
  CHECK(r.stages[0].embedding);
  CHECK(r.stages[1].first_layer == 5);
  CHECK(r.stages[1].num_layers == 3);
  CHECK(r.stages[1].head);
  // Parameters: the two TP shards of one replica; memory: the largest peak.
  CHECK(r.stages[0].parameters == doctest::Approx(2000));
  CHECK(r.stages[1].parameters == doctest::Approx(2200));
  CHECK(r.stages[0].max_allocated_mb == doctest::Approx(130));
  CHECK(r.stages[1].max_allocated_mb == doctest::Approx(430));
  // Per micro-batch: dp 0 1 ms / 2 ms, dp 1 2 ms / 4 ms; the mean 1.5 / 3.
  CHECK(r.stages[0].forward_ms == doctest::Approx(1.5));
  CHECK(r.stages[0].backward_ms == doctest::Approx(3.0));
  // Per iteration: (8 + 16) / 2 = 12 and (16 + 32) / 2 = 24, mean 18; bubble 1 - 36 / 100.
  CHECK(r.stages[1].compute_ms == doctest::Approx(18));
  CHECK(r.bubble == doctest::Approx(0.64));
  CHECK(r.ideal_bubble == doctest::Approx(0.2));

  const std::vector<std::string> lines = format_stage_report(r, 10);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].find("[pipeline stage 0] after iteration 10: layers 0-4 (5, embedding)") !=
        std::string::npos);
  CHECK(lines[1].find("layers 5-7 (3, output layer and loss) | parameters: 2200") !=
        std::string::npos);
  CHECK(lines[1].find("max allocated (MB): 430.00") != std::string::npos);
  CHECK(lines[2].find("measured bubble: 64.0%") != std::string::npos);
  CHECK(lines[2].find("m = 4: 20.0%") != std::string::npos);

  const std::string j = stage_report_json(r, 1);
  CHECK(j.rfind(",\"stage\":1,", 0) == 0);
  CHECK(j.find("\"pipeline_bubble\":0.64") != std::string::npos);
  CHECK(j.find("{\"first_layer\":5,\"num_layers\":3,\"embedding\":false,\"head\":true,"
               "\"parameters\":2200") != std::string::npos);
}

TEST_CASE("stage report: an empty end stage prints no layer range") {
  std::vector<StageFigures> ranks = {figures(0, 0, 0, 500, 10, 1, 2, 1),
                                     figures(1, 0, 4, 900, 20, 3, 6, 1)};
  const StageReport r = stage_report(exchange(ranks, 1), 2, 1, 20.0, 1);
  CHECK(format_stage_report(r, 1)[0].find("layers none (0, embedding)") != std::string::npos);
  CHECK(r.bubble == doctest::Approx(1 - 12.0 / 40.0));
}

TEST_CASE("stage report: a rank naming a stage outside the pipeline is an internal error") {
  std::vector<StageFigures> ranks = {figures(3, 0, 1, 1, 1, 1, 1, 1)};
  CHECK_THROWS(stage_report(exchange(ranks, 1), 2, 1, 10.0, 1));
}

TEST_CASE("stage report: the wall clock sums passes by kind and take() starts afresh") {
  auto c = make_pass_clock(nullptr);
  c->begin();
  c->end(false);
  c->begin();
  c->end(true);
  c->begin();
  c->end(true);
  PassClock::Totals t = c->take();
  CHECK(t.forwards == 1);
  CHECK(t.backwards == 2);
  CHECK(t.forward_ms >= 0);
  t = c->take();
  CHECK(t.forwards == 0);
  CHECK(t.backwards == 0);
}
