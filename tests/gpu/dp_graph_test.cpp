// The CUDA backend's step graphs with overlapped data parallelism, on one GPU (one NCCL rank): the
// micro-batches whose backward queues the bucket reductions (and whose forward queues the
// parameters' all-gathers) are captured with those collectives and replayed, giving the bits and
// the collective count of --cuda-graphs off.
#include <doctest/doctest.h>

#ifdef GPT_HAVE_NCCL

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/dist/nccl_communicator.h"
#include "train/loop/data_parallel.h"
#include "train/model/init.h"

using namespace gputest;

namespace {

// Passes the backend's calls on to DataParallel, counting the graph launches.
struct CountingHooks : gpt::Backend::CapturedHooks {
  explicit CountingHooks(gpt::DataParallel& dp) : dp(dp) {}
  gpt::DataParallel& dp;
  int captures = 0, launches = 0;
  void capture_begin() override { dp.capture_begin(); }
  bool capture_end(int key, bool ok) override {
    const bool kept = dp.capture_end(key, ok);
    captures += kept;
    return kept;
  }
  bool can_replay(int key) const override { return dp.can_replay(key); }
  void replayed(int key, void* stream) override {
    ++launches;
    dp.replayed(key, stream);
  }
};

struct DpRun {
  std::vector<double> losses;
  std::vector<float> params;
  uint64_t seq = 0;
  int captures = 0, launches = 0;
  std::string path;
};

DpRun run(bool graphs, bool bf16, bool sharded, int accum) {
  gpt::ModelConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 64;
  cfg.num_heads = 4;
  cfg.ffn_hidden_size = 256;
  cfg.seq_length = 32;
  cfg.max_position_embeddings = 32;
  cfg.vocab_size = 100;
  cfg.padded_vocab_size = gpt::pad_vocab(100);
  cfg.validate();
  const gpt::ParamLayout layout(cfg);
  const gpt::BucketPlan plan = gpt::plan_buckets(layout.total(), 1, 20000);
  REQUIRE(plan.buckets.size() > 3);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  DpRun out;
  // Declared first: the backend (its graphs hold NCCL's captured work) goes before it.
  gpt::dist::NcclCommunicator comm(gpt::dist::NcclCommunicator::make_unique_id(), 0, 1, 0,
                                   nullptr, 120, false);
  gpt::BackendOptions o;
  o.device = "cuda";
  o.micro_batch = 4;
  o.bf16 = bf16;
  o.flat_padding = plan.padded - plan.numel;
  if (sharded) o.optimizer_shard = plan.owned(0);
  o.shard_master = sharded && bf16;
  o.kernels.cuda_graphs = graphs;
  gpt::CudaBackend be(cfg, layout, o);
  gpt::DistEnv env;
  env.comm = &comm;
  env.host_sum = [&comm](double* v, size_t n) { comm.host_reduce_f64(v, n, false); };
  env.set_stream = [&comm](void* s) { comm.set_stream(static_cast<cudaStream_t>(s)); };
  gpt::DataParallelOptions dpo;
  dpo.distributed_optimizer = sharded;
  dpo.overlap_grad_reduce = true;
  dpo.overlap_param_gather = sharded;
  gpt::DataParallel dp(be, plan, env, dpo);
  CountingHooks hooks(dp);
  be.set_captured_hooks(&hooks);
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 1234);
  be.set_params(params.data());
  const int BT = 4 * cfg.seq_length;
  for (int step = 1; step <= 6; ++step) {
    be.zero_grad();
    for (int mb = 0; mb < accum; ++mb) {
      auto in = randint(BT, cfg.vocab_size, 100 * step + mb);
      auto tgt = randint(BT, cfg.vocab_size, 100 * step + 50 + mb);
      be.queue_micro_batch(in.data(), tgt.data(), 1.0f / float(BT * accum), accum);
    }
    const gpt::Backend::StepEnd e = dp.end_step(gpt::AdamWConfig{}, 1e-3f, step, 1.0f, 1.0);
    CHECK(e.updated);
    out.losses.push_back(e.loss);
  }
  out.params.resize(layout.total());
  be.get_params(out.params.data());
  out.seq = comm.seq();
  out.captures = hooks.captures;
  out.launches = hooks.launches;
  out.path = be.attention_path();
  return out;
}

}  // namespace

TEST_CASE("cuda step graphs with the overlapped collectives: the bits of --cuda-graphs off") {
  struct Case {
    bool bf16, sharded;
    int accum;
  };
  for (const Case c : {Case{false, false, 1}, Case{false, false, 2}, Case{true, true, 1}}) {
    CAPTURE(c.bf16);
    CAPTURE(c.sharded);
    CAPTURE(c.accum);
    const DpRun on = run(true, c.bf16, c.sharded, c.accum);
    const DpRun off = run(false, c.bf16, c.sharded, c.accum);
    CHECK(on.losses == off.losses);
    CHECK(same_bits(on.params, off.params));
    // The graphs' collectives counted once each; each capture adds the ranks' agreement on it.
    CHECK(on.seq == off.seq + uint64_t(on.captures));
    CHECK(on.path.find("CUDA graphs on (with the bucket reductions") != std::string::npos);
    CHECK(off.path.find("CUDA graphs on") == std::string::npos);
    CHECK(off.launches == 0);
    // Each key warms up eagerly, is captured at its second micro-batch and replayed from then
    // on. Sharded, the first step's micro-batch finds the parameters in place; every later one
    // gathers them first (another key, warmed up at step 2).
    CHECK(on.captures == 1);
    CHECK(on.launches == (c.sharded ? 6 - 2 : 6 - 1));
  }
}

#endif  // GPT_HAVE_NCCL
