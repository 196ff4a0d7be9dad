// DataParallel's side of the CUDA step graphs (Backend::CapturedHooks), on CPU backends with ranks
// as threads: a micro-batch captured with its overlapped collectives and then replayed must leave
// the hook state, the collectives run and their sequence numbers as the eager micro-batch does,
// and a capture that fails on one rank must fail on all of them and leave nothing behind.
#include <doctest/doctest.h>

#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/unit/train/thread_comm.h"
#include "train/loop/data_parallel.h"
#include "train/model/init.h"

namespace {

using gpt::dist::DType;

// Captures as the NCCL communicator does inside a CUDA graph: between begin_capture and
// end_capture each collective is recorded by name, takes no sequence number, and runs at once
// only with run_in_capture (the CPU cannot defer it: the capture then stands for the graph's
// first launch, whose issue_captured only counts). Without, it is dropped, as the collectives of
// a capture that is thrown away.
class CapturingComm final : public gpt::dist::Communicator {
 public:
  explicit CapturingComm(gpt::dist::Communicator& inner) : c_(inner) {}
  bool run_in_capture = true;
  std::map<std::string, int> ran;  // collectives run, by name
  std::vector<std::string> launched;  // issue_captured's names, every launch appended

  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  std::string kind() const override { return "capturing"; }
  void all_reduce_sum(void* buf, size_t n, DType t) override {
    go("all_reduce", [&] { c_.all_reduce_sum(buf, n, t); });
  }
  void reduce_scatter_sum(const void* in, void* out, size_t n, DType t) override {
    go("reduce_scatter", [&] { c_.reduce_scatter_sum(in, out, n, t); });
  }
  void all_gather(const void* in, void* out, size_t n, DType t) override {
    go("all_gather", [&] { c_.all_gather(in, out, n, t); });
  }
  void broadcast(void* buf, size_t n, DType t, int root) override {
    go("broadcast", [&] { c_.broadcast(buf, n, t, root); });
  }
  void send(const void* b, size_t n, DType t, int p) override { c_.send(b, n, t, p); }
  void recv(void* b, size_t n, DType t, int p) override { c_.recv(b, n, t, p); }
  void synchronize() override { c_.synchronize(); }
  uint64_t seq() const override { return seq_; }
  void begin_capture() override {
    capturing_ = true;
    captured_.clear();
  }
  std::vector<std::string> end_capture() override {
    capturing_ = false;
    return std::exchange(captured_, {});
  }
  void issue_captured(const std::vector<std::string>& names, void*) override {
    seq_ += names.size();
    launched.insert(launched.end(), names.begin(), names.end());
  }

 private:
  template <class F>
  void go(const char* name, F&& f) {
    if (capturing_) {
      captured_.push_back(name);
      if (!run_in_capture) return;
    } else {
      ++seq_;
    }
    ++ran[name];
    f();
  }
  gpt::dist::Communicator& c_;
  bool capturing_ = false;
  std::vector<std::string> captured_;
  uint64_t seq_ = 0;
};

enum class Mode { kEager, kCaptured, kCaptureFails };

struct RankSteps {
  std::vector<double> losses;
  std::vector<uint64_t> seqs;                     // the communicator's count after each step
  std::vector<std::map<std::string, int>> ran;  // the collectives run up to each step's end
  std::vector<std::string> launched;
  std::vector<float> params;  // after the last step
};

constexpr int kKey = 6;  // the backend's graph key (any: DataParallel keeps what it is given)

// Three steps of one micro-batch per rank (every micro-batch is a step's last, as at the
// benchmark's accumulation 1). kCaptured: steps 2 and 3 are captured and then launched, as the
// CUDA backend does once a graph's warm-up ran; kCaptureFails: their capture fails on rank 1, so
// every rank must give it up and run the micro-batch eagerly.
std::vector<RankSteps> run_steps(const gpt::DataParallelOptions& o, Mode mode) {
  const gpt::ModelConfig cfg = train_test::three_layer_config();
  const gpt::ParamLayout layout(cfg);
  const int D = 2;
  const gpt::BucketPlan plan = gpt::plan_buckets(layout.total(), D, 1500);
  REQUIRE(plan.buckets.size() > 4);
  train_test::ThreadGroup group(D);
  std::vector<RankSteps> out(D);
  train_test::run_ranks(D, [&](int r) {
    auto be = train_test::dp_backend(cfg, layout, plan, o.distributed_optimizer, r);
    train_test::ThreadComm thread_comm(group, r);
    CapturingComm comm(thread_comm);
    gpt::DistEnv env = thread_comm.env();  // host_sum through the thread group directly
    env.comm = &comm;
    gpt::DataParallel dp(*be, plan, env, o);
    RankSteps& s = out[r];
    for (int step = 0; step < 3; ++step) {
      std::vector<int> tokens(16);
      for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int((i * 7 + r + 3 * step) % 40);
      be->zero_grad();
      if (mode == Mode::kEager || step == 0) {
        be->queue_micro_batch(tokens.data(), tokens.data(), 1.0f / 16, 1);
      } else if (mode == Mode::kCaptured) {
        comm.run_in_capture = true;
        const uint64_t seq = comm.seq();
        dp.capture_begin();
        be->queue_micro_batch(tokens.data(), tokens.data(), 1.0f / 16, 1);
        CHECK(comm.seq() == seq);  // captured collectives take no number
        REQUIRE(dp.capture_end(kKey, true));
        CHECK(dp.can_replay(kKey));  // the state the capture started from
        dp.replayed(kKey, nullptr);
        CHECK(comm.seq() > seq);
        // Replayed once: its hooks' state is the capture's end, not its start.
        CHECK_FALSE(dp.can_replay(kKey));
        CHECK_THROWS_AS(dp.replayed(kKey, nullptr), std::logic_error);
      } else {
        comm.run_in_capture = false;
        dp.capture_begin();
        be->queue_micro_batch(tokens.data(), tokens.data(), 1.0f / 16, 1);
        CHECK_FALSE(dp.capture_end(kKey, r != 1));  // rank 0's succeeded: still refused
        CHECK_FALSE(dp.can_replay(kKey));
        // The CPU computed the micro-batch during the "capture": undo, then run it eagerly.
        be->take_step_loss();
        be->zero_grad();
        be->queue_micro_batch(tokens.data(), tokens.data(), 1.0f / 16, 1);
      }
      s.losses.push_back(dp.end_step(gpt::AdamWConfig{}, 1e-2f, step + 1, 1.0f, 1.0).loss);
      s.seqs.push_back(comm.seq());
      s.ran.push_back(comm.ran);
    }
    s.launched = comm.launched;
    s.params.resize(layout.total());
    be->get_params(s.params.data());
  });
  return out;
}

void check_as_eager(const std::vector<RankSteps>& eager, const std::vector<RankSteps>& other) {
  for (size_t r = 0; r < eager.size(); ++r) {
    CAPTURE(r);
    CHECK(other[r].losses == eager[r].losses);
    CHECK(other[r].params == eager[r].params);
    CHECK(other[r].seqs == eager[r].seqs);  // no collective counted twice or left out
    CHECK(other[r].ran == eager[r].ran);    // none run twice (end_step reduces no more)
  }
}

// Overlapped reductions, plain and sharded with the overlapped gathers.
std::vector<gpt::DataParallelOptions> overlap_options() {
  gpt::DataParallelOptions plain;
  plain.overlap_grad_reduce = true;
  gpt::DataParallelOptions sharded = plain;
  sharded.distributed_optimizer = true;
  sharded.overlap_param_gather = true;
  return {plain, sharded};
}

}  // namespace

TEST_CASE("step graphs: a captured and replayed overlapped micro-batch leaves the eager state") {
  for (const auto& o : overlap_options()) {
    CAPTURE(o.distributed_optimizer);
    const auto eager = run_steps(o, Mode::kEager);
    const auto captured = run_steps(o, Mode::kCaptured);
    check_as_eager(eager, captured);
    // Each launch counted the capture's collectives: every bucket's reduction, and with the
    // distributed optimizer first (in the forward) every bucket's all-gather.
    const size_t nb = eager[0].ran.back().count("all_reduce")
                          ? size_t(eager[0].ran[0].at("all_reduce"))
                          : size_t(eager[0].ran[0].at("reduce_scatter"));
    REQUIRE(nb > 4);
    for (const RankSteps& s : captured) {
      REQUIRE(s.launched.size() == (o.distributed_optimizer ? 4 : 2) * nb);
      if (o.distributed_optimizer) {
        for (size_t i = 0; i < nb; ++i) CHECK(s.launched[i] == "all_gather");
        for (size_t i = nb; i < 2 * nb; ++i) CHECK(s.launched[i] == "reduce_scatter");
      } else {
        for (const std::string& n : s.launched) CHECK(n == "all_reduce");
      }
    }
  }
}

TEST_CASE("step graphs: a capture that fails on one rank is given up by all, then runs eagerly") {
  for (const auto& o : overlap_options()) {
    CAPTURE(o.distributed_optimizer);
    const auto failed = run_steps(o, Mode::kCaptureFails);
    check_as_eager(run_steps(o, Mode::kEager), failed);
    for (const RankSteps& s : failed) CHECK(s.launched.empty());
  }
}
