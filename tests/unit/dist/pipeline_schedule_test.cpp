// The pipeline schedules run for every rank together: each transfer completes only once its peer
// posts the matching one (the strictest a blocking communicator can be), so a schedule that could
// deadlock, or pair an activation with the wrong micro-batch, fails here.
#include <doctest/doctest.h>

#include <map>

#include "common/cli/error.h"
#include "train/dist/pipeline_schedule.h"

using namespace gpt::dist;

namespace {

struct Posted {
  bool gradient;
  int microbatch, stage;  // the model stage that sent / receives
};

struct Result {
  bool finished = false;
  std::string problem;           // empty when every transfer paired with its match
  std::vector<int> in_flight;    // per rank, the most micro-batch chunks held
};

// Runs every rank's actions. A rank at a batch of transfers posts them all, and moves on once
// each has a counterpart on its channel (sender, receiver), matched in order.
Result simulate(int P, int V, int m) {
  std::vector<std::vector<PipeAction>> acts(P);
  for (int r = 0; r < P; ++r) acts[r] = pipeline_schedule(P, V, m, r);
  std::map<std::pair<int, int>, std::vector<Posted>> sends, recvs;
  std::vector<size_t> pc(P, 0);
  std::vector<bool> posted(P, false);
  std::vector<std::vector<std::pair<std::pair<int, int>, size_t>>> waits(P);  // channel, index
  std::vector<std::vector<bool>> done_f(P), done_b(P);
  std::vector<int> held(P, 0), most(P, 0);
  Result res;
  bool moved = true;
  while (moved) {
    moved = false;
    for (int r = 0; r < P; ++r) {
      while (pc[r] < acts[r].size()) {
        const PipeAction& a = acts[r][pc[r]];
        if (a.kind == PipeAction::Kind::kForward) {
          most[r] = std::max(most[r], ++held[r]);
        } else if (a.kind == PipeAction::Kind::kBackward) {
          --held[r];
        } else {
          if (!posted[r]) {
            waits[r].clear();
            for (const PipeTransfer& t : a.transfers) {
              auto ch = t.send ? std::make_pair(r, t.peer) : std::make_pair(t.peer, r);
              auto& list = t.send ? sends[ch] : recvs[ch];
              list.push_back({t.gradient, t.microbatch, t.chunk * P + r});
              waits[r].push_back({ch, list.size() - 1});
            }
            posted[r] = true;
            moved = true;
          }
          bool all = true;
          for (size_t i = 0; i < a.transfers.size(); ++i) {
            const auto& [ch, k] = waits[r][i];
            all = all && (a.transfers[i].send ? recvs[ch].size() : sends[ch].size()) > k;
          }
          if (!all) break;
          posted[r] = false;
        }
        ++pc[r];
        moved = true;
      }
    }
  }
  res.finished = true;
  for (int r = 0; r < P; ++r) res.finished = res.finished && pc[r] == acts[r].size();
  for (auto& [ch, s] : sends) {
    const auto& rv = recvs[ch];
    if (s.size() != rv.size()) res.problem = "unequal sends and receives";
    for (size_t k = 0; k < std::min(s.size(), rv.size()); ++k) {
      const int want = s[k].gradient ? s[k].stage - 1 : s[k].stage + 1;
      if (s[k].gradient != rv[k].gradient || s[k].microbatch != rv[k].microbatch ||
          rv[k].stage != want)
        res.problem = "transfer " + std::to_string(k) + " from rank " +
                      std::to_string(ch.first) + " to " + std::to_string(ch.second) +
                      " pairs different data";
    }
  }
  res.in_flight = most;
  for (int r = 0; r < P; ++r) CHECK(most[r] == max_in_flight(acts[r]));
  return res;
}

int count(const std::vector<PipeAction>& a, PipeAction::Kind k) {
  int n = 0;
  for (const auto& x : a) n += x.kind == k;
  return n;
}

}  // namespace

TEST_CASE("pipeline schedule: 1F1B's order on 2 ranks") {
  CHECK(schedule_text(pipeline_schedule(2, 1, 3, 0)) ==
        "F0.0 [>F0.0@1] F1.0 [>F1.0@1 <B0.0@1] B0.0 F2.0 [>F2.0@1 <B1.0@1] B1.0 [<B2.0@1] "
        "B2.0");
  CHECK(schedule_text(pipeline_schedule(2, 1, 3, 1)) ==
        "[<F0.0@0] F0.0 B0.0 [>B0.0@0 <F1.0@0] F1.0 B1.0 [>B1.0@0 <F2.0@0] F2.0 B2.0 [>B2.0@0]");
}

TEST_CASE("pipeline schedule: 1F1B runs without deadlock, Megatron's warm-up, P - pp in flight") {
  for (int P = 1; P <= 6; ++P)
    for (int m : {1, 2, 3, 5, 8, 13}) {
      CAPTURE(P);
      CAPTURE(m);
      Result r = simulate(P, 1, m);
      CHECK(r.finished);
      CHECK(r.problem == "");
      for (int pp = 0; pp < P; ++pp) {
        CHECK(r.in_flight[pp] == std::min(P - pp, m));
        auto a = pipeline_schedule(P, 1, m, pp);
        CHECK(count(a, PipeAction::Kind::kForward) == m);
        CHECK(count(a, PipeAction::Kind::kBackward) == m);
        // Warm-up: the forwards before the first backward.
        int warm = 0;
        for (const auto& x : a) {
          if (x.kind == PipeAction::Kind::kBackward) break;
          warm += x.kind == PipeAction::Kind::kForward;
        }
        CHECK(warm == std::min(P - pp - 1, m) + (m > P - pp - 1 ? 1 : 0));
      }
    }
}

TEST_CASE("pipeline schedule: the interleaved schedule runs without deadlock") {
  for (int P = 3; P <= 5; ++P)
    for (int V = 2; V <= 3; ++V)
      for (int groups = 1; groups <= 3; ++groups) {
        const int m = P * groups;
        CAPTURE(P);
        CAPTURE(V);
        CAPTURE(m);
        Result r = simulate(P, V, m);
        CHECK(r.finished);
        CHECK(r.problem == "");
        for (int pp = 0; pp < P; ++pp) {
          const int warmup = m == P ? m * V : std::min((P - pp - 1) * 2 + (V - 1) * P, m * V);
          CHECK(r.in_flight[pp] == std::min(warmup + 1, m * V));
          auto a = pipeline_schedule(P, V, m, pp);
          CHECK(count(a, PipeAction::Kind::kForward) == m * V);
          // At most one send and one receive per neighbour in a batch.
          for (const auto& x : a) {
            std::map<std::pair<int, bool>, int> per;
            for (const auto& t : x.transfers) CHECK(++per[{t.peer, t.send}] == 1);
          }
        }
      }
  // Megatron's order on rank 0 of 3 with 2 chunks, 6 micro-batches: groups of P through chunk
  // 0, then chunk 1.
  auto a = pipeline_schedule(3, 2, 6, 0);
  std::string order;
  for (const auto& x : a)
    if (x.kind == PipeAction::Kind::kForward)
      order += std::to_string(x.microbatch) + "." + std::to_string(x.chunk) + " ";
  CHECK(order == "0.0 1.0 2.0 0.1 1.1 2.1 3.0 4.0 5.0 3.1 4.1 5.1 ");
  CHECK_THROWS_WITH_AS(pipeline_schedule(4, 2, 6, 0),
                       "number of microbatches (6) is not divisible by "
                       "pipeline-model-parallel-size (4) when using interleaved schedule",
                       suite::UsageError);
}
