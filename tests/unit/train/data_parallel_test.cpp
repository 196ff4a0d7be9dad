// Data-parallel training on the CPU backend, ranks as threads of this process (thread_comm.h):
// the sample order, the loss scaling, the reduction and the sharded optimizer against one process.
#include <doctest/doctest.h>

#include <cmath>
#include <exception>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "common/cli/error.h"
#include "tests/unit/train/thread_comm.h"
#include "tests/unit/train/train_helpers.h"
#include "train/backend/optimizer_shard.h"
#include "train/loop/data_parallel.h"
#include "train/model/checkpoint.h"
#include "train/model/init.h"

using train_test::parse;
using train_test::tiny_flags;

namespace {

struct RankRun {
  gpt::TrainResult result;
  std::string log;
};

// D ranks as threads. --cpu-threads 0: the shared CPU pool is not resized under running ranks.
std::vector<RankRun> run_dp(std::vector<std::string> flags, int D) {
  flags = tiny_flags(flags);
  for (size_t i = 0; i + 1 < flags.size(); ++i)
    if (flags[i] == "--cpu-threads") flags[i + 1] = "0";
  train_test::ThreadGroup group(D);
  std::vector<RankRun> out(D);
  train_test::run_ranks(D, [&](int r) {
    gpt::TrainArgs a = parse(flags);
    gpt::apply_data_parallel(a, D);
    train_test::ThreadComm comm(group, r);
    gpt::DistEnv env = comm.env();
    std::ostringstream log;
    out[r].result = gpt::run_training(a, log, &env);
    out[r].log = log.str();
  });
  return out;
}

gpt::TrainResult run_one(std::vector<std::string> flags, std::string* log = nullptr) {
  flags = tiny_flags(flags);
  for (size_t i = 0; i + 1 < flags.size(); ++i)
    if (flags[i] == "--cpu-threads") flags[i + 1] = "0";
  return train_test::run(flags, log);
}

void check_close(const std::vector<double>& a, const std::vector<double>& b, double rel) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(a[i] - b[i]) <= rel * std::fabs(b[i]));
  }
}

// The hashes of the "params hash: rank R iteration I H" lines, in order.
std::vector<std::string> hashes_of(const std::string& log) {
  const std::regex re(R"(params hash: rank (\d+) iteration (\d+) ([0-9a-f]{16}))");
  std::vector<std::string> out;
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it)
    out.push_back((*it)[3]);
  return out;
}

// Every rank printed the same weights hash at each of the iterations.
void check_same_weights(const std::vector<RankRun>& runs, int iterations) {
  std::vector<std::vector<std::string>> hashes;
  for (const auto& r : runs) hashes.push_back(hashes_of(r.log));
  for (size_t r = 0; r < runs.size(); ++r) {
    CAPTURE(r);
    CHECK(int(hashes[r].size()) == iterations);
    CHECK(hashes[r] == hashes[0]);
  }
}

}  // namespace

TEST_CASE("gradient buckets: multiples of the data-parallel size, owned pieces cover once") {
  const gpt::BucketPlan p = gpt::plan_buckets(103, 3, 30);
  CHECK(p.padded == 108);
  REQUIRE(p.buckets.size() == 5);  // 24-element buckets (30 rounded down to a multiple of 4 x 3)
  CHECK(p.buckets[0].end == 24);
  CHECK(p.buckets.back().end == 108);
  for (int r = 0; r < 3; ++r)
    for (auto [lo, hi] : p.owned(r)) CHECK(lo % 4 == 0);
  std::vector<int> covered(103, 0);
  for (int r = 0; r < 3; ++r)
    for (auto [lo, hi] : p.owned(r))
      for (size_t i = lo; i < hi; ++i) ++covered[i];
  for (int c : covered) CHECK(c == 1);
  CHECK(gpt::plan_buckets(10, 4, 1).buckets[0].end == 16);  // at least 4·D per bucket
  CHECK(gpt::plan_buckets(12, 1, 40000000).buckets.size() == 1);
}

TEST_CASE("gradient buckets at the layers' starts: filled from the top, the first layer and the "
          "embeddings alone") {
  // Embeddings [0, 100), six layers of 50 from 100, the final LayerNorm [400, 410); D = 2, so
  // cuts are rounded up to multiples of 8.
  const std::vector<size_t> starts{100, 150, 200, 250, 300, 350};
  const gpt::BucketPlan p = gpt::plan_buckets(410, 2, 120, starts);
  CHECK(p.padded == 416);
  std::vector<std::pair<size_t, size_t>> got;
  for (const gpt::Bucket& b : p.buckets) got.push_back({b.begin, b.end});
  // From the top: [256, 416) holds 120 or more at the cut of 250 (rounded to 256); [152, 256)
  // ends at the second cut (152) with less; then layer 0 [104, 152) and the embeddings.
  const std::vector<std::pair<size_t, size_t>> want{{0, 104}, {104, 152}, {152, 256}, {256, 416}};
  CHECK(got == want);
  // The pieces still start on 4-element boundaries and cover every element once.
  std::vector<int> covered(410, 0);
  for (int r = 0; r < 2; ++r)
    for (auto [lo, hi] : p.owned(r)) {
      CHECK(lo % 4 == 0);
      for (size_t i = lo; i < hi; ++i) ++covered[i];
    }
  for (int c : covered) CHECK(c == 1);
  // A model of one layer: the layer, then the embeddings.
  CHECK(gpt::plan_buckets(410, 2, 120, {100}).buckets.size() == 2);
}

TEST_CASE("optimizer shard: compact moments of the owned ranges") {
  const gpt::OptimizerShard s({{10, 20}, {40, 45}}, 100);
  CHECK(s.size() == 15);
  CHECK(s.compact(12, 20) == 2);
  CHECK(s.compact(40, 41) == 10);
  CHECK_THROWS_AS(s.compact(18, 22), std::logic_error);
  CHECK(gpt::OptimizerShard({}, 7).size() == 7);
}

TEST_CASE("--ddp-bucket-size defaults to max(40M, 1M x DP); global batch checked against DP") {
  gpt::TrainArgs a = parse(tiny_flags({"--train-iters", "2", "--global-batch-size", "128"}));
  gpt::apply_data_parallel(a, 64);
  CHECK(gpt::ddp_bucket_size(a) == 64000000);
  gpt::apply_data_parallel(a, 2);
  CHECK(gpt::ddp_bucket_size(a) == 40000000);
  CHECK_THROWS_WITH_AS(gpt::apply_data_parallel(a, 3),
                       "global batch size (128) is not divisible by micro batch size (2) times "
                       "data parallel size (3)",
                       suite::UsageError);
  gpt::TrainArgs d = parse(tiny_flags({"--train-iters", "2", "--global-batch-size", "0"}));
  gpt::apply_data_parallel(d, 3);
  CHECK(d.global_batch_size == 6);  // micro-batch x DP
  CHECK_THROWS_WITH_AS(parse(tiny_flags({"--train-iters", "2", "--overlap-param-gather"})),
                       doctest::Contains("--overlap-param-gather only supported with distributed "
                                         "optimizer"),
                       suite::UsageError);
}

TEST_CASE("data parallel DP=2 and DP=3 match one process with the same global batch") {
  // global batch = 6 x micro-batch: accumulation 6 (one process), 3 (DP=2), 2 (DP=3)
  const std::vector<std::string> f = {"--train-iters", "20", "--global-batch-size", "12",
                                      "--mock-data-samples", "64", "--log-interval", "1",
                                      "--log-params-hash", "--hidden-dropout", "0.1"};
  const gpt::TrainResult one = run_one(f);
  for (int D : {2, 3}) {
    CAPTURE(D);
    const auto runs = run_dp(f, D);
    for (const auto& r : runs) check_close(r.result.losses, one.losses, 1e-5);
    check_same_weights(runs, 20);
    // The last rank prints the iteration lines, every rank its start and memory lines.
    for (int r = 0; r < D; ++r) {
      CHECK((runs[r].log.find(" iteration       20/      20 |") != std::string::npos) ==
            (r == D - 1));
      CHECK(runs[r].log.find("[Rank " + std::to_string(r) + "] (after 1 iterations) memory") !=
            std::string::npos);
      CHECK(runs[r].log.find(" > rank " + std::to_string(r) + " of " + std::to_string(D) +
                             ": host ") != std::string::npos);
    }
  }
}

TEST_CASE("distributed optimizer: the losses of plain data parallelism, bit for bit") {
  for (const char* clip : {"1.0", "0.1"}) {
    CAPTURE(clip);
    // 4 buckets with a padded tail: the parameter count does not divide by 3.
    const std::vector<std::string> f = {"--train-iters", "8", "--global-batch-size", "6",
                                        "--clip-grad", clip, "--ddp-bucket-size", "1000",
                                        "--log-interval", "1", "--log-params-hash"};
    const auto plain = run_dp(f, 3);
    auto g = f;
    g.push_back("--use-distributed-optimizer");
    const auto sharded = run_dp(g, 3);
    CHECK(sharded[0].log.find("distributed optimizer (AdamW state sharded, ") != std::string::npos);
    for (int r = 0; r < 3; ++r) CHECK(sharded[r].result.losses == plain[0].result.losses);
    check_same_weights(sharded, 8);
    // the weights too: the hash lines of both runs agree
    CHECK(hashes_of(sharded[2].log) == hashes_of(plain[2].log));
    // Each rank keeps a third of the AdamW moments.
    auto allocated = [](const std::string& log) {
      std::smatch m;
      REQUIRE(std::regex_search(log, m, std::regex(R"(\| allocated: ([0-9.]+) \|)")));
      return std::stod(m[1]);
    };
    CHECK(allocated(sharded[1].log) < allocated(plain[1].log));
  }
}

TEST_CASE("--overlap-grad-reduce and --overlap-param-gather: the same bits as without") {
  // 2 layers in 5 buckets, 3 micro-batches per step: only the last one's backward reduces.
  const std::vector<std::string> f = {"--num-layers", "2", "--train-iters", "6",
                                      "--global-batch-size", "12", "--mock-data-samples", "64",
                                      "--ddp-bucket-size", "2000", "--clip-grad", "0.1",
                                      "--log-interval", "1", "--log-params-hash"};
  for (bool sharded : {false, true}) {
    CAPTURE(sharded);
    auto base = f;
    if (sharded) base.push_back("--use-distributed-optimizer");
    const auto plain = run_dp(base, 2);
    auto over = base;
    over.push_back("--overlap-grad-reduce");
    if (sharded) over.push_back("--overlap-param-gather");
    const auto overlapped = run_dp(over, 2);
    for (int r = 0; r < 2; ++r) CHECK(overlapped[r].result.losses == plain[r].result.losses);
    CHECK(hashes_of(overlapped[1].log) == hashes_of(plain[1].log));
    check_same_weights(overlapped, 6);
    // Without the hash lines (a host read of the weights after each step), the deferred
    // all-gathers are queued by the next forward.
    over.erase(std::find(over.begin(), over.end(), "--log-params-hash"));
    const auto unhashed = run_dp(over, 2);
    CHECK(unhashed[1].result.losses == plain[1].result.losses);
  }
}

TEST_CASE("distributed optimizer with --bf16: the fp32 master sharded, plain DP's bits") {
  // On the CPU the compute copy is the fp32 params themselves: what runs is the data flow of
  // the CUDA backend's sharded master (the gather through the staging in chunks, get_params
  // as a collective), checked against plain DP, with and without the overlap.
  train_test::TempDir dir("gpt-train-dp-master");
  const std::vector<std::string> f = {"--num-layers", "2", "--train-iters", "6",
                                      "--global-batch-size", "12", "--mock-data-samples", "64",
                                      "--ddp-bucket-size", "2000", "--clip-grad", "0.1",
                                      "--log-interval", "1", "--log-params-hash", "--bf16"};
  const auto plain = run_dp(f, 3);
  for (bool overlap : {false, true}) {
    CAPTURE(overlap);
    auto g = f;
    for (const char* w : {"--use-distributed-optimizer", "--save", "", "--save-interval", "3"})
      g.push_back(w);
    g[g.size() - 3] = dir / (overlap ? "ov" : "ck");
    if (overlap) {
      g.push_back("--overlap-grad-reduce");
      g.push_back("--overlap-param-gather");
    }
    const auto sharded = run_dp(g, 3);
    CHECK(sharded[0].log.find("(AdamW state and fp32 master weights sharded, ") !=
          std::string::npos);
    for (int r = 0; r < 3; ++r) CHECK(sharded[r].result.losses == plain[r].result.losses);
    check_same_weights(sharded, 6);
    CHECK(hashes_of(sharded[2].log) == hashes_of(plain[2].log));
  }
  // The deferred gathers queued by the next forward (no host read of the weights in between).
  auto quiet = f;
  quiet.erase(std::find(quiet.begin(), quiet.end(), "--log-params-hash"));
  for (const char* w : {"--use-distributed-optimizer", "--overlap-grad-reduce",
                        "--overlap-param-gather"})
    quiet.push_back(w);
  CHECK(run_dp(quiet, 3)[2].result.losses == plain[2].result.losses);
  // Its checkpoint (each rank's own fp32 pieces) resumes at DP=1 with the same next losses.
  auto resume = f;
  resume.push_back("--load");
  resume.push_back(dir / "ck");
  resume.push_back("--train-iters");
  resume.push_back("6");
  std::ofstream(dir / "ck/latest_checkpointed_iteration.txt") << "3\n";
  const std::vector<double> tail(plain[2].result.losses.begin() + 3, plain[2].result.losses.end());
  check_close(run_one(resume).losses, tail, 1e-5);
  // and at the same layout, bit for bit
  resume.push_back("--use-distributed-optimizer");
  CHECK(run_dp(resume, 3)[2].result.losses == tail);
}

namespace {

// Records the flat-buffer offset of each collective's input (then passes it on).
class RecordingComm final : public gpt::dist::Communicator {
 public:
  RecordingComm(gpt::dist::Communicator& inner, const float* base) : c_(inner), base_(base) {}
  std::vector<long> offsets;
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  std::string kind() const override { return c_.kind(); }
  void all_reduce_sum(void* buf, size_t n, gpt::dist::DType t) override {
    note(buf);
    c_.all_reduce_sum(buf, n, t);
  }
  void reduce_scatter_sum(const void* in, void* out, size_t n, gpt::dist::DType t) override {
    note(in);
    c_.reduce_scatter_sum(in, out, n, t);
  }
  void all_gather(const void* in, void* out, size_t n, gpt::dist::DType t) override {
    c_.all_gather(in, out, n, t);
  }
  void broadcast(void* buf, size_t n, gpt::dist::DType t, int root) override {
    c_.broadcast(buf, n, t, root);
  }
  void send(const void* b, size_t n, gpt::dist::DType t, int p) override { c_.send(b, n, t, p); }
  void recv(void* b, size_t n, gpt::dist::DType t, int p) override { c_.recv(b, n, t, p); }
  void synchronize() override { c_.synchronize(); }
  uint64_t seq() const override { return c_.seq(); }

 private:
  void note(const void* p) { offsets.push_back(static_cast<const float*>(p) - base_); }
  gpt::dist::Communicator& c_;
  const float* base_;
};

}  // namespace

namespace {

// One step of D ranks (threads) on CPU backends driven directly: the collectives' offsets
// recorded after the first and the second micro-batch, and each rank's parameters afterwards.
struct DirectStep {
  std::vector<std::vector<long>> before, after;
  std::vector<std::vector<float>> params, compute;  // get_params; the compute copy (CPU: params)
};

DirectStep direct_step(const gpt::DataParallelOptions& o, bool shard_master) {
  const gpt::ModelConfig cfg = train_test::three_layer_config();
  const gpt::ParamLayout layout(cfg);
  const int D = 2;
  const gpt::BucketPlan plan = gpt::plan_buckets(layout.total(), D, 1500);
  REQUIRE(plan.buckets.size() > 4);
  train_test::ThreadGroup group(D);
  DirectStep out;
  out.before.resize(D);
  out.after.resize(D);
  out.params.assign(D, std::vector<float>(layout.total()));
  out.compute = out.params;
  train_test::run_ranks(D, [&](int r) {
    auto be = train_test::dp_backend(cfg, layout, plan, o.distributed_optimizer, r,
                                     shard_master);
    std::vector<float> params(layout.total());
    gpt::init_parameters(params.data(), cfg, layout, 1234);  // dp_backend's weights
    train_test::ThreadComm thread_comm(group, r);
    RecordingComm comm(thread_comm, be->flat_buffers().grads);
    gpt::DistEnv env = thread_comm.env();
    env.comm = &comm;
    gpt::DataParallel dp(*be, plan, env, o);
    std::vector<int> tokens(16);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int((i * 7 + r) % 40);
    be->zero_grad();
    for (int m = 0; m < 2; ++m) {
      be->queue_micro_batch(tokens.data(), tokens.data(), 1.0f / 64, 2);
      if (m == 0) out.before[r] = comm.offsets;
    }
    out.after[r] = comm.offsets;
    dp.end_step(gpt::AdamWConfig{}, 1e-2f, 1, 1.0f, 1.0);
    be->get_params(out.params[r].data());
    const float* c = be->flat_buffers().params;
    std::copy(c, c + layout.total(), out.compute[r].begin());
    // The step moved the weights.
    CHECK(out.params[r] != params);
  });
  for (auto it = plan.buckets.rbegin(); it != plan.buckets.rend(); ++it)
    out.before.push_back({long(it->begin)});  // (the expected order, for the caller)
  return out;
}

}  // namespace

TEST_CASE("--overlap-grad-reduce: the last micro-batch's backward reduces each bucket") {
  gpt::DataParallelOptions o;
  o.overlap_grad_reduce = true;
  const DirectStep s = direct_step(o, false);
  std::vector<long> expected;
  for (size_t i = 2; i < s.before.size(); ++i) expected.push_back(s.before[i][0]);
  for (int r = 0; r < 2; ++r) {
    CHECK(s.before[r].empty());      // the first micro-batch reduces nothing
    CHECK(s.after[r] == expected);  // the second: every bucket, the last one first
  }
  CHECK(s.params[0] == s.params[1]);
}

TEST_CASE("sharded fp32 master: the all-gather in small chunks and get_params over the ranks") {
  gpt::DataParallelOptions plain;
  plain.distributed_optimizer = true;
  const DirectStep a = direct_step(plain, false);
  gpt::DataParallelOptions chunked = plain;
  chunked.gather_chunk = 7;  // several chunks per bucket, not dividing the pieces
  const DirectStep b = direct_step(chunked, true);
  for (int r = 0; r < 2; ++r) {
    CHECK(b.params[r] == a.params[r]);
    CHECK(b.compute[r] == a.compute[r]);
  }
  CHECK(b.params[0] == b.params[1]);
}

TEST_CASE("--grad-reduce-in-bf16 trains and keeps the ranks' weights identical") {
  const std::vector<std::string> f = {"--train-iters", "6", "--global-batch-size", "4",
                                      "--log-interval", "1", "--log-params-hash",
                                      "--grad-reduce-in-bf16", "--use-distributed-optimizer"};
  const auto runs = run_dp(f, 2);
  const gpt::TrainResult one = run_one({"--train-iters", "6", "--global-batch-size", "4"});
  check_same_weights(runs, 6);
  check_close(runs[0].result.losses, one.losses, 1e-2);  // bf16 sums: close, not equal
}

TEST_CASE("a checkpoint of DP=2 with the distributed optimizer resumes at DP=1 and DP=4") {
  train_test::TempDir dir("gpt-train-dp-ckpt");
  const std::vector<std::string> f = {"--train-iters", "12", "--micro-batch-size", "1",
                                      "--global-batch-size", "4", "--mock-data-samples", "32",
                                      "--log-interval", "1", "--eval-iters", "1",
                                      "--eval-interval", "4"};
  const gpt::TrainResult straight = run_one(f);
  auto first = f;
  for (const char* w : {"--use-distributed-optimizer", "--save", "", "--exit-interval", "6"})
    first.push_back(w);
  first[first.size() - 3] = dir / "ck";
  const auto saved = run_dp(first, 2);
  CHECK(saved[1].result.final_iteration == 6);
  // Validation split over the ranks, its loss global: the one process's at iteration 4.
  REQUIRE(saved[0].result.validation_losses.size() == 1);
  check_close(saved[0].result.validation_losses, {straight.validation_losses[0]}, 1e-5);
  CHECK(saved[1].result.validation_losses == saved[0].result.validation_losses);
  CHECK(std::filesystem::exists(dir / "ck/iter_0000006/shard_1_of_2.bin"));
  CHECK(std::filesystem::exists(dir / "ck/iter_0000006/index.txt"));
  const std::vector<double> tail(straight.losses.begin() + 6, straight.losses.end());
  auto resume = f;
  resume.push_back("--load");
  resume.push_back(dir / "ck");
  check_close(run_one(resume).losses, tail, 1e-5);
  for (const auto& r : run_dp(resume, 4)) check_close(r.result.losses, tail, 1e-5);
  auto resume_sharded = resume;
  resume_sharded.push_back("--use-distributed-optimizer");
  // Same layout (DP=2, distributed optimizer): bit for bit.
  const auto same = run_dp(resume_sharded, 2);
  const auto whole = run_dp([&] {
    auto w = f;
    w.push_back("--use-distributed-optimizer");
    return w;
  }(), 2);
  const std::vector<double> whole_tail(whole[0].result.losses.begin() + 6,
                                       whole[0].result.losses.end());
  CHECK(same[0].result.losses == whole_tail);
}

TEST_CASE("--finetune loads the weights only; --no-load-optim starts AdamW afresh") {
  train_test::TempDir dir("gpt-train-finetune");
  run_one({"--train-iters", "4", "--save", dir / "ck"});
  std::string log;
  const auto ft = run_one({"--train-iters", "3", "--load", dir / "ck", "--finetune"}, &log);
  CHECK(ft.losses.size() == 3);  // iteration counted from 0 again
  CHECK(log.find("(--finetune: weights only)") != std::string::npos);
  const auto scratch = run_one({"--train-iters", "3"});
  CHECK(ft.losses[0] < scratch.losses[0]);  // trained weights
  const auto no_optim =
      run_one({"--train-iters", "6", "--load", dir / "ck", "--no-load-optim"}, &log);
  CHECK(no_optim.losses.size() == 2);  // iterations 5 and 6
  CHECK(log.find("(--no-load-optim)") != std::string::npos);
}

TEST_CASE("checkpoints of the single-file format (GPTCKPT1) still load") {
  // (unit tests run from the repository root, as the other tests/data readers)
  const gpt::Checkpoint c = gpt::load_checkpoint("tests/data/checkpoints/gptckpt1");
  CHECK(c.state.iteration == 3);
  CHECK(c.model.hidden_size == 16);
  CHECK(c.params.size() == c.adam_m.size());
}

TEST_CASE("a sharded checkpoint with a missing or foreign shard is refused, naming the file") {
  train_test::TempDir dir("gpt-train-dp-shards");
  const std::string ck = dir / "ck";
  run_dp({"--train-iters", "2", "--global-batch-size", "4", "--save", ck, "--lr-warmup-iters", "0",
          "--use-distributed-optimizer"}, 2);
  CHECK(gpt::load_checkpoint(ck).state.iteration == 2);
  // "where: what", as gpt-train prints a ToolError
  auto error = [&] {
    try {
      gpt::load_checkpoint(ck);
    } catch (const suite::ToolError& e) {
      return e.where() + ": " + e.what();
    }
    return std::string("no error");
  };
  const std::string iter = ck + "/iter_0000002/";
  std::filesystem::rename(iter + "shard_1_of_2.bin", dir / "kept.bin");
  CHECK(error().find("shard_1_of_2.bin: checkpoint file is missing") != std::string::npos);
  // a shard of another checkpoint (iteration 1's) in its place
  run_dp({"--train-iters", "1", "--global-batch-size", "4", "--save", dir / "other",
          "--lr-warmup-iters", "0", "--use-distributed-optimizer"}, 2);
  std::filesystem::copy_file(dir / "other/iter_0000001/shard_1_of_2.bin", iter + "shard_1_of_2.bin");
  CHECK(error().find("shard_1_of_2.bin: shard belongs to another checkpoint") != std::string::npos);
  std::filesystem::remove(iter + "shard_1_of_2.bin");
  std::filesystem::rename(dir / "kept.bin", iter + "shard_1_of_2.bin");
  std::filesystem::remove(iter + "index.txt");
  CHECK(error().find("index.txt: checkpoint index is missing") != std::string::npos);
}
