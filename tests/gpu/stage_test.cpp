// The CUDA backend's pipeline stages and tensor parallelism against the whole model on one GPU,
// in one process: pipeline stages are backends chained through their stage buffers; tensor-parallel
// ranks are backends driven by one host thread each, their collectives done by a host-side
// communicator (ThreadComm) so that no second GPU or NCCL is needed. The same initial weights
// (the whole model's, sliced) and batches give the same losses and, gathered, the same gradients.
#include <doctest/doctest.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/gpu/gpu_test_util.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/dist/communicator.h"
#include "train/model/init.h"

using namespace gputest;

namespace {

constexpr int kB = 2, kM = 3;  // micro-batch size, micro-batches per step

gpt::ModelConfig model() {
  gpt::ModelConfig c;
  c.num_layers = 3;
  c.hidden_size = 64;
  c.num_heads = 4;
  c.ffn_hidden_size = 256;
  c.seq_length = 32;
  c.max_position_embeddings = 32;
  c.vocab_size = 200;  // padded to 256 for T=2: the second rank's rows are partly padding
  c.padded_vocab_size = gpt::pad_vocab(200, 2);
  c.init_method_std = 0.05f;
  c.validate();
  return c;
}

gpt::BackendOptions options(bool bf16) {
  gpt::BackendOptions o;
  o.device = "cuda";
  o.micro_batch = kB;
  o.bf16 = bf16;
  return o;
}

// Collectives between host threads, one per rank, each driving its own backend: the device
// buffers are copied to the host after the calling thread's stream (the backend's) is done.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), bar_(size), slots_(size_t(size)) {}
  int size() const { return size_; }
  // Every rank's bytes, in rank order, once every rank has put its own.
  std::vector<std::vector<char>> exchange(int rank, std::vector<char> mine) {
    slots_[size_t(rank)] = std::move(mine);
    bar_.arrive_and_wait();
    std::vector<std::vector<char>> all = slots_;
    bar_.arrive_and_wait();
    return all;
  }
  // A rank that failed leaves the group, so that the others finish (with wrong sums) instead of
  // waiting for it forever.
  void leave() { bar_.arrive_and_drop(); }

 private:
  int size_;
  std::barrier<> bar_;
  std::vector<std::vector<char>> slots_;
};

class ThreadComm : public gpt::dist::Communicator {
 public:
  ThreadComm(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size(); }
  std::string kind() const override { return "test"; }
  void all_reduce_sum(void* buf, size_t n, gpt::dist::DType t) override {
    ++seq_;
    const auto all = g_.exchange(rank_, download(buf, n * elem(t)));
    upload(buf, sum(all, 0, n, t).data(), n * elem(t));
  }
  void all_gather(const void* in, void* out, size_t n, gpt::dist::DType t) override {
    const size_t bytes = n * gpt::dist::dtype_bytes(t);
    ++seq_;
    const auto all = g_.exchange(rank_, download(in, bytes));
    for (size_t r = 0; r < all.size(); ++r)
      upload(static_cast<char*>(out) + r * bytes, all[r].data(), bytes);
  }
  void host_reduce_f64(double* v, size_t n, bool max) override {
    ++seq_;
    std::vector<char> mine(n * 8);
    std::memcpy(mine.data(), v, n * 8);
    const auto all = g_.exchange(rank_, std::move(mine));
    for (size_t i = 0; i < n; ++i) {
      double acc = max ? -INFINITY : 0.0;
      for (const auto& r : all) {
        const double x = reinterpret_cast<const double*>(r.data())[i];
        acc = max ? std::fmax(acc, x) : acc + x;
      }
      v[i] = acc;
    }
  }
  void reduce_scatter_sum(const void* in, void* out, size_t n, gpt::dist::DType t) override {
    ++seq_;
    const auto all = g_.exchange(rank_, download(in, n * elem(t) * all_size()));
    upload(out, sum(all, size_t(rank_) * n, n, t).data(), n * elem(t));
  }
  void broadcast(void*, size_t, gpt::dist::DType, int) override { no(); }
  void send(const void*, size_t, gpt::dist::DType, int) override { no(); }
  void recv(void*, size_t, gpt::dist::DType, int) override { no(); }
  void synchronize() override {}
  uint64_t seq() const override { return seq_; }

 private:
  size_t all_size() const { return size_t(g_.size()); }
  // The sums take fp32, or bf16 (the layers' collectives with --bf16).
  static size_t elem(gpt::dist::DType t) {
    if (t != gpt::dist::DType::kF32 && t != gpt::dist::DType::kBF16) no();
    return gpt::dist::dtype_bytes(t);
  }
  // Elements [at, at + n) of every rank's bytes summed in fp32 in rank order and rounded once to
  // t, as NCCL's sums of two ranks are.
  static std::vector<char> sum(const std::vector<std::vector<char>>& all, size_t at, size_t n,
                               gpt::dist::DType t) {
    using gpt::cuda::bf16;
    const bool half = t == gpt::dist::DType::kBF16;
    std::vector<float> acc(n, 0.0f);
    for (const auto& r : all)
      for (size_t i = 0; i < n; ++i)
        acc[i] += half ? __bfloat162float(reinterpret_cast<const bf16*>(r.data())[at + i])
                       : reinterpret_cast<const float*>(r.data())[at + i];
    std::vector<char> out(n * elem(t));
    if (!half) std::memcpy(out.data(), acc.data(), n * 4);
    for (size_t i = 0; half && i < n; ++i)
      reinterpret_cast<bf16*>(out.data())[i] = __float2bfloat16_rn(acc[i]);
    return out;
  }
  // Not what the backend's layers call (asserts would not work on the ranks' threads: a throw).
  static void no() { throw std::logic_error("ThreadComm: not used by the backend's layers"); }
  // On the calling thread's stream (the backend's), complete when they return.
  static std::vector<char> download(const void* dev, size_t bytes) {
    std::vector<char> h(bytes);
    GPT_CUDA_CHECK(cudaMemcpyAsync(h.data(), dev, bytes, cudaMemcpyDeviceToHost,
                                   gpt::cuda::stream()));
    GPT_CUDA_CHECK(cudaStreamSynchronize(gpt::cuda::stream()));
    return h;
  }
  static void upload(void* dev, const void* host, size_t bytes) {
    GPT_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, gpt::cuda::stream()));
    GPT_CUDA_CHECK(cudaStreamSynchronize(gpt::cuda::stream()));
  }
  ThreadGroup& g_;
  int rank_;
  uint64_t seq_ = 0;
};

struct Batches {
  std::vector<std::vector<int>> inputs, targets;
};

Batches batches(const gpt::ModelConfig& cfg, uint32_t seed) {
  Batches b;
  for (int m = 0; m < kM; ++m) {
    b.inputs.push_back(randint(size_t(kB) * cfg.seq_length, cfg.vocab_size, seed + 2 * m));
    b.targets.push_back(randint(size_t(kB) * cfg.seq_length, cfg.vocab_size, seed + 2 * m + 1));
  }
  return b;
}

std::vector<float> full_params(const gpt::ModelConfig& cfg) {
  const gpt::ParamLayout full(cfg);
  std::vector<float> p(full.total());
  gpt::init_parameters(p.data(), cfg, full, 77);
  const auto noise = randn(p.size(), 9, 0.02f);  // non-trivial biases and norms
  for (size_t i = 0; i < p.size(); ++i) p[i] += noise[i];
  return p;
}

struct Result {
  std::vector<float> losses;  // per micro-batch
  std::vector<float> grads;   // the whole model's layout (the ranks' and stages' parts gathered)
  double norm = 0;            // grad_norm() of the first stage (TP: over the TP group)
  float eval = 0;             // forward_loss / stage_forward_loss of a fresh batch
};

float weight(const gpt::ModelConfig& cfg) { return 1.0f / float(kB * cfg.seq_length * kM); }

Result whole_model(const gpt::ModelConfig& cfg, const gpt::BackendOptions& o, const Batches& b,
                   const Batches& eval) {
  const gpt::ParamLayout layout(cfg);
  gpt::CudaBackend be(cfg, layout, o);
  be.set_params(full_params(cfg).data());
  be.zero_grad();
  Result r;
  for (int m = 0; m < kM; ++m)
    r.losses.push_back(be.forward_backward(b.inputs[size_t(m)].data(),
                                           b.targets[size_t(m)].data(), weight(cfg)));
  r.grads.resize(layout.total());
  be.get_grads(r.grads.data());
  r.norm = be.grad_norm();
  r.eval = be.forward_loss(eval.inputs[0].data(), eval.targets[0].data());
  return r;
}

// One TP rank's chain of pipeline stages (a single whole-model stage: tensor parallelism only,
// through forward_backward). Its gradients are added into `grads` (the whole model's layout):
// the tied word embedding's from both ends, a TP shard where this rank holds it.
Result run_rank(const gpt::ModelConfig& cfg, gpt::BackendOptions o,
                std::vector<gpt::StageSpec> specs, const Batches& b, const Batches& eval,
                gpt::dist::Communicator* tp, std::vector<float>& grads) {
  const gpt::ParamLayout full(cfg);
  const std::vector<float> params = full_params(cfg);
  std::vector<std::unique_ptr<gpt::CudaBackend>> stages;
  std::vector<gpt::ParamLayout> layouts;
  for (const gpt::StageSpec& s : specs) {
    layouts.emplace_back(cfg, s);
    o.stage = s;
    o.tp_comm = tp;
    o.pipeline_slots = specs.size() > 1 ? kM : 1;
    stages.push_back(std::make_unique<gpt::CudaBackend>(cfg, layouts.back(), o));
    std::vector<float> local(layouts.back().total());
    layouts.back().shard_of_full(full, params.data(), local.data());
    stages.back()->set_params(local.data());
    stages.back()->zero_grad();
  }
  const size_t S = stages.size();
  Result r;
  if (S == 1) {
    for (int m = 0; m < kM; ++m)
      r.losses.push_back(stages[0]->forward_backward(b.inputs[size_t(m)].data(),
                                                     b.targets[size_t(m)].data(), weight(cfg)));
    r.eval = stages[0]->forward_loss(eval.inputs[0].data(), eval.targets[0].data());
  } else {
    // The passes return with their work queued on their backend's stream, and each stage here has
    // its own: the next one waits for the device (the executor's stages share a stream instead).
    const auto done = [] { GPT_CUDA_CHECK(cudaDeviceSynchronize()); };
    // Every micro-batch's forward first (all slots in use), then the backwards, oldest first.
    for (int m = 0; m < kM; ++m) {
      const void* act = nullptr;
      for (size_t s = 0; s < S; ++s) {
        void* out = s + 1 < S ? stages[s]->stage_buffer(m) : nullptr;
        const float loss = stages[s]->stage_forward(m, b.inputs[size_t(m)].data(),
                                                    b.targets[size_t(m)].data(), act, out);
        done();
        if (s + 1 == S) r.losses.push_back(loss);
        act = out;
      }
    }
    for (int m = 0; m < kM; ++m) {
      const void* dout = nullptr;
      for (size_t s = S; s-- > 0;) {
        void* din = s > 0 ? stages[s]->stage_buffer(kM + m) : nullptr;
        stages[s]->stage_backward(m, dout, din, weight(cfg));
        done();
        dout = din;
      }
    }
    const void* act = nullptr;
    for (size_t s = 0; s < S; ++s) {
      void* out = s + 1 < S ? stages[s]->stage_buffer(2 * kM) : nullptr;
      const float loss = stages[s]->stage_forward_loss(eval.inputs[0].data(),
                                                       eval.targets[0].data(), act, out);
      done();
      if (s + 1 == S) r.eval = loss;
      act = out;
    }
  }
  r.norm = stages[0]->grad_norm();
  for (size_t s = 0; s < S; ++s) {
    std::vector<float> local(layouts[s].total()), global;
    stages[s]->get_grads(local.data());
    for (const gpt::TensorInfo& t : layouts[s].tensors()) {
      // This rank's part of the tensor, added (the tied embedding comes from two stages; a
      // replicated tensor is the same on every TP rank and is added by rank 0 only).
      if (gpt::ParamLayout::replicated_in_tp(t) && o.stage.tp_rank > 0) continue;
      global.assign(t.global_numel, 0.0f);
      layouts[s].unshard(t, local.data() + t.offset, global.data());
      float* dst = grads.data() + full.tensors()[size_t(t.global_index)].offset;
      for (size_t i = 0; i < t.global_numel; ++i) dst[i] += global[i];
    }
  }
  return r;
}

gpt::StageSpec spec(int first, int layers, bool embedding, bool head, int tp = 1, int rank = 0,
                    bool sp = false) {
  gpt::StageSpec s;
  s.sequence_parallel = sp;
  s.first_layer = first;
  s.num_layers = layers;
  s.has_embedding = embedding;
  s.has_head = head;
  s.tp_size = tp;
  s.tp_rank = rank;
  return s;
}

// specs_of(rank): that TP rank's stages. Runs the TP ranks on threads (one when tp == 1).
std::vector<Result> run_layout(const gpt::ModelConfig& cfg, const gpt::BackendOptions& o, int tp,
                               const std::function<std::vector<gpt::StageSpec>(int)>& specs_of,
                               const Batches& b, const Batches& eval, std::vector<float>& grads) {
  grads.assign(gpt::ParamLayout(cfg).total(), 0.0f);
  std::vector<Result> results(static_cast<size_t>(tp));
  if (tp == 1) {
    results[0] = run_rank(cfg, o, specs_of(0), b, eval, nullptr, grads);
    return results;
  }
  ThreadGroup group(tp);
  std::vector<std::unique_ptr<ThreadComm>> comms;
  for (int r = 0; r < tp; ++r) comms.push_back(std::make_unique<ThreadComm>(group, r));
  std::vector<std::vector<float>> part(size_t(tp), std::vector<float>(grads.size(), 0.0f));
  std::vector<std::string> errors(static_cast<size_t>(tp));
  std::vector<std::thread> threads;
  for (int r = 0; r < tp; ++r)
    threads.emplace_back([&, r] {
      try {
        GPT_CUDA_CHECK(cudaSetDevice(0));
        results[size_t(r)] =
            run_rank(cfg, o, specs_of(r), b, eval, comms[size_t(r)].get(), part[size_t(r)]);
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
        group.leave();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < tp; ++r) {
    INFO("TP rank " << r);
    REQUIRE(errors[size_t(r)].empty());
    for (size_t i = 0; i < grads.size(); ++i) grads[i] += part[size_t(r)][i];
  }
  return results;
}

void check_against_whole(const char* what, bool bf16, int tp,
                         const std::function<std::vector<gpt::StageSpec>(int)>& specs_of) {
  INFO(what << (bf16 ? " (bf16)" : " (fp32)"));
  const gpt::ModelConfig cfg = model();
  const gpt::BackendOptions o = options(bf16);
  const Batches b = batches(cfg, 100), eval = batches(cfg, 500);
  const Result ref = whole_model(cfg, o, b, eval);
  std::vector<float> grads;
  const std::vector<Result> got = run_layout(cfg, o, tp, specs_of, b, eval, grads);
  // fp32: the same operations up to the order of the TP sums. bf16: the stage boundary is
  // rounded to bf16, and under TP the row-parallel sums differ in rounding.
  const double tol = bf16 ? 2e-2 : 1e-5;
  for (const Result& r : got) {
    close(std::string(what) + " losses", r.losses, ref.losses, tol);
    close(std::string(what) + " eval loss", {r.eval}, {ref.eval}, tol);
  }
  if (bf16) return;  // bf16 gradients are compared through the losses of whole runs (tp_pp.sh)
  close(std::string(what) + " gradients", grads, ref.grads, 1e-4, 1e-5);
  // grad_norm: over the TP group where the first stage is the whole model.
  if (specs_of(0).size() == 1)
    close(std::string(what) + " norm", {float(got[0].norm)}, {float(ref.norm)}, 1e-5);
}

}  // namespace

TEST_CASE("stages: P=2 and P=3 (0-3-0) chained on one GPU equal the whole model") {
  for (bool bf16 : {false, true}) {
    check_against_whole("P=2 (1-2)", bf16, 1, [](int) {
      return std::vector<gpt::StageSpec>{spec(0, 1, true, false), spec(1, 2, false, true)};
    });
    check_against_whole("P=3 (0-3-0)", bf16, 1, [](int) {
      return std::vector<gpt::StageSpec>{spec(0, 0, true, false), spec(0, 3, false, false),
                                         spec(3, 0, false, true)};
    });
  }
}

TEST_CASE("tensor parallelism: T=2 ranks on threads equal the whole model") {
  for (bool bf16 : {false, true})
    check_against_whole("T=2", bf16, 2, [](int r) {
      return std::vector<gpt::StageSpec>{spec(0, -1, true, true, 2, r)};
    });
}

TEST_CASE("sequence parallelism: T=2 with --sequence-parallel equals the whole model") {
  for (bool bf16 : {false, true})
    check_against_whole("T=2 SP", bf16, 2, [](int r) {
      return std::vector<gpt::StageSpec>{spec(0, -1, true, true, 2, r, true)};
    });
  check_against_whole("T=2 SP P=2", false, 2, [](int r) {
    return std::vector<gpt::StageSpec>{spec(0, 1, true, false, 2, r, true),
                                       spec(1, 2, false, true, 2, r, true)};
  });
}

TEST_CASE("tensor and pipeline parallelism: T=2 x P=2 equal the whole model") {
  check_against_whole("T=2 P=2", false, 2, [](int r) {
    return std::vector<gpt::StageSpec>{spec(0, 2, true, false, 2, r),
                                       spec(2, 1, false, true, 2, r)};
  });
}
