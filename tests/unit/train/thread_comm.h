// An in-process communicator for tests: N ranks as N threads of one process, each with its own
// ThreadComm over a shared ThreadGroup. Sums add the ranks' contributions in rank order, as the
// TCP communicator does, so all_reduce == reduce_scatter + all_gather bit for bit.
#pragma once

#include <barrier>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "train/dist/communicator.h"
#include "train/loop/data_parallel.h"
#include "train/model/config.h"
#include "train/model/init.h"
#include "train/model/layout.h"

namespace train_test {

struct ThreadGroup {
  explicit ThreadGroup(int n) : size(n), sync(n), in(n) {}
  int size;
  std::barrier<> sync;
  std::vector<const void*> in;
};

inline float bf16_to_float(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

class ThreadComm final : public gpt::dist::Communicator {
 public:
  ThreadComm(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size; }
  std::string kind() const override { return "thread"; }

  void all_reduce_sum(void* buf, size_t n, gpt::dist::DType t) override {
    exchange(buf, [&](std::vector<char>& tmp) { sum(tmp, 0, n, t); }, buf, n, t);
  }
  void reduce_scatter_sum(const void* in, void* out, size_t n, gpt::dist::DType t) override {
    exchange(in, [&](std::vector<char>& tmp) { sum(tmp, size_t(rank_) * n, n, t); }, out, n, t);
  }
  void all_gather(const void* in, void* out, size_t n, gpt::dist::DType t) override {
    const size_t b = bytes(t);
    exchange(in, [&](std::vector<char>& tmp) {
      tmp.resize(n * b * g_.size);
      for (int r = 0; r < g_.size; ++r) std::memcpy(tmp.data() + r * n * b, g_.in[r], n * b);
    }, out, n * g_.size, t);
  }
  void broadcast(void* buf, size_t n, gpt::dist::DType t, int root) override {
    exchange(buf, [&](std::vector<char>& tmp) {
      tmp.assign(static_cast<const char*>(g_.in[root]),
                 static_cast<const char*>(g_.in[root]) + n * bytes(t));
    }, buf, n, t);
  }
  void send(const void*, size_t, gpt::dist::DType, int) override {
    throw std::logic_error("ThreadComm: no point-to-point");
  }
  void recv(void*, size_t, gpt::dist::DType, int) override {
    throw std::logic_error("ThreadComm: no point-to-point");
  }
  void synchronize() override {}
  uint64_t seq() const override { return seq_; }

  // DistEnv::host_sum over this communicator.
  gpt::DistEnv env() {
    gpt::DistEnv e;
    e.rank = rank_;
    e.world_size = g_.size;
    e.local_rank = rank_;
    e.comm = this;
    e.host_sum = [this](double* v, size_t n) { all_reduce_sum(v, n, gpt::dist::DType::kF64); };
    return e;
  }

 private:
  static size_t bytes(gpt::dist::DType t) {
    switch (t) {
      case gpt::dist::DType::kBF16: return 2;
      case gpt::dist::DType::kF32: return 4;
      default: return 8;
    }
  }
  // Publish in, wait for all, compute into a private buffer, wait until every rank has read,
  // then write out (out may alias any rank's in).
  void exchange(const void* in, const std::function<void(std::vector<char>&)>& compute, void* out,
                size_t n_out, gpt::dist::DType t) {
    ++seq_;
    g_.in[rank_] = in;
    g_.sync.arrive_and_wait();
    std::vector<char> tmp;
    compute(tmp);
    g_.sync.arrive_and_wait();
    std::memcpy(out, tmp.data(), n_out * bytes(t));
    g_.sync.arrive_and_wait();
  }
  void sum(std::vector<char>& tmp, size_t first, size_t n, gpt::dist::DType t) {
    tmp.resize(n * bytes(t));
    for (size_t i = 0; i < n; ++i) {
      if (t == gpt::dist::DType::kF32) {
        float acc = static_cast<const float*>(g_.in[0])[first + i];
        for (int r = 1; r < g_.size; ++r) acc += static_cast<const float*>(g_.in[r])[first + i];
        std::memcpy(tmp.data() + i * 4, &acc, 4);
      } else if (t == gpt::dist::DType::kF64) {
        double acc = static_cast<const double*>(g_.in[0])[first + i];
        for (int r = 1; r < g_.size; ++r) acc += static_cast<const double*>(g_.in[r])[first + i];
        std::memcpy(tmp.data() + i * 8, &acc, 8);
      } else if (t == gpt::dist::DType::kBF16) {
        float acc = bf16_to_float(static_cast<const uint16_t*>(g_.in[0])[first + i]);
        for (int r = 1; r < g_.size; ++r)
          acc += bf16_to_float(static_cast<const uint16_t*>(g_.in[r])[first + i]);
        const uint16_t h = float_to_bf16(acc);
        std::memcpy(tmp.data() + i * 2, &h, 2);
      } else {
        throw std::logic_error("ThreadComm: unsupported sum type");
      }
    }
  }
  ThreadGroup& g_;
  int rank_;
  uint64_t seq_ = 0;
};

// The DataParallel tests' model: three layers of 16, whose flat buffer makes more than four
// buckets of 1500 parameters over two ranks.
inline gpt::ModelConfig three_layer_config() {
  gpt::ModelConfig cfg;
  cfg.num_layers = 3;
  cfg.hidden_size = 16;
  cfg.num_heads = 2;
  cfg.ffn_hidden_size = 64;
  cfg.seq_length = 8;
  cfg.max_position_embeddings = 8;
  cfg.vocab_size = 40;
  cfg.padded_vocab_size = 128;
  return cfg;
}

// Runs fn(r) for ranks 0 .. D-1 on D threads; then rethrows the first failed rank's exception.
inline void run_ranks(int D, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(D);
  std::vector<std::thread> threads;
  for (int r = 0; r < D; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Rank r's CPU backend for the DataParallel tests (micro-batch 2): its flat buffers padded as
// `plan` pads them, its optimizer shard under the distributed optimizer, the weights of seed 1234.
inline std::unique_ptr<gpt::Backend> dp_backend(const gpt::ModelConfig& cfg,
                                                const gpt::ParamLayout& layout,
                                                const gpt::BucketPlan& plan,
                                                bool distributed_optimizer, int r,
                                                bool shard_master = false) {
  gpt::BackendOptions bo;
  bo.micro_batch = 2;
  bo.flat_padding = plan.padded - plan.numel;
  if (distributed_optimizer) bo.optimizer_shard = plan.owned(r);
  bo.shard_master = shard_master;
  auto be = gpt::make_backend(cfg, layout, bo);
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 1234);
  be->set_params(params.data());
  return be;
}

}  // namespace train_test
