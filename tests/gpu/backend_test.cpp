// The CUDA backend against the CPU backend on a small GPT, and run-to-run bitwise determinism.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>

#include "common/cli/error.h"
#include "kernels/ops.h"
#include "kernels/sm90/capability.cuh"
#include "tests/gpu/gpu_test_util.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/model/init.h"

using namespace gputest;

namespace {

gpt::ModelConfig small_model() {
  gpt::ModelConfig c;
  c.num_layers = 2;
  c.hidden_size = 64;
  c.num_heads = 4;
  c.ffn_hidden_size = 256;
  c.seq_length = 32;
  c.max_position_embeddings = 40;
  c.vocab_size = 100;
  c.padded_vocab_size = gpt::pad_vocab(100);
  c.init_method_std = 0.05f;
  c.validate();
  return c;
}

constexpr int kMicroBatch = 4, kAccum = 2;

struct Run {
  std::vector<float> losses, norms, params, m, v;
};

// The runs' starting parameters: the model's initialisation plus noise (non-trivial norms and
// biases).
void set_start_params(gpt::Backend& be, const gpt::ModelConfig& cfg, const gpt::ParamLayout& layout) {
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 1234);
  auto noise = randn(params.size(), 5, 0.02f);
  for (size_t i = 0; i < params.size(); ++i) params[i] += noise[i];
  be.set_params(params.data());
}

// After a run's steps: the forward loss of a fresh batch, the parameters and the moments.
void finish_run(Run& r, gpt::Backend& be, const gpt::ModelConfig& cfg,
                const gpt::ParamLayout& layout) {
  const int BT = kMicroBatch * cfg.seq_length;
  auto in = randint(BT, cfg.vocab_size, 300), tgt = randint(BT, cfg.vocab_size, 301);
  r.losses.push_back(be.forward_loss(in.data(), tgt.data()));
  r.params.resize(layout.total());
  r.m.resize(layout.total());
  r.v.resize(layout.total());
  be.get_params(r.params.data());
  be.get_optimizer_state(r.m.data(), r.v.data());
}

// Two runs that must agree to the bit after their steps: norms, parameters, AdamW's moments.
void check_same_state(const Run& a, const Run& b) {
  CHECK(same_bits(a.norms, b.norms));
  CHECK(same_bits(a.params, b.params));
  CHECK(same_bits(a.m, b.m));
  CHECK(same_bits(a.v, b.v));
}

// Steps of: zero_grad, kAccum micro-batches, grad norm, clip, AdamW. Also returns the gradients
// of the first step (for the CPU comparison).
// loss_scale: the trainer's fp16 loss scaling (gradients scaled up, then back down in AdamW).
// queued: the steps as the trainer runs them (queue_micro_batch, then end_step: on the CUDA
// backend the norm, the clipping and whether to update decided on the device); losses then holds
// each step's loss (its micro-batches' losses / kAccum, summed) instead of each micro-batch's.
Run train(gpt::Backend& be, const gpt::ModelConfig& cfg, const gpt::ParamLayout& layout, int steps,
          std::vector<float>* first_grads = nullptr, float loss_scale = 1.0f,
          bool queued = false) {
  set_start_params(be, cfg, layout);
  const int BT = kMicroBatch * cfg.seq_length;
  Run r;
  gpt::AdamWConfig opt;
  opt.weight_decay = 0.1f;
  for (int step = 1; step <= steps; ++step) {
    be.zero_grad();
    for (int mb = 0; mb < kAccum; ++mb) {
      auto in = randint(BT, cfg.vocab_size, 100 + mb), tgt = randint(BT, cfg.vocab_size, 200 + mb);
      be.set_dropout_key(uint64_t(step) * 16 + mb);  // used only with hidden dropout
      const float weight = loss_scale / float(BT * kAccum);
      if (queued)
        be.queue_micro_batch(in.data(), tgt.data(), weight, kAccum);
      else
        r.losses.push_back(be.forward_backward(in.data(), tgt.data(), weight));
    }
    if (step == 1 && first_grads) {
      first_grads->resize(layout.total());
      be.get_grads(first_grads->data());
    }
    if (queued) {
      const gpt::Backend::StepEnd e = be.end_step(opt, 1e-3f, step, 1.0f, loss_scale);
      CHECK(e.updated);
      r.losses.push_back(float(e.loss));
      r.norms.push_back(float(e.norm));
      continue;
    }
    const double norm = be.grad_norm() / loss_scale;
    r.norms.push_back(float(norm));
    be.adamw_step(opt, 1e-3f, step, gpt::clip_scale(float(norm), 1.0f) / loss_scale);
  }
  finish_run(r, be, cfg, layout);
  return r;
}

gpt::BackendOptions options(bool bf16, bool recompute = false, bool fp16 = false,
                            float dropout = 0.0f) {
  gpt::BackendOptions o;
  o.device = "cuda";
  o.micro_batch = kMicroBatch;
  o.bf16 = bf16;
  o.fp16 = fp16;
  o.recompute_activations = recompute;
  o.hidden_dropout = dropout;
  return o;
}

// The CPU reference backend with the same micro-batch (and hidden dropout).
gpt::BackendOptions cpu_options(float dropout = 0.0f) {
  gpt::BackendOptions o = options(false, false, false, dropout);
  o.device = "cpu";
  return o;
}

}  // namespace

// fp32 CUDA backend with these options against the CPU backend: the loss of every micro-batch
// (3 steps × 2) and the forward loss after three updates, grad norms, every gradient tensor.
static void check_fp32_against_cpu(const gpt::BackendOptions& gpu_options, const std::string& what) {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::CpuBackend cpu(cfg, layout, cpu_options());
  gpt::CudaBackend gpu(cfg, layout, gpu_options);
  std::vector<float> gcpu, ggpu;
  const Run a = train(cpu, cfg, layout, 3, &gcpu), b = train(gpu, cfg, layout, 3, &ggpu);
  close(what + " step losses", b.losses, a.losses, kF32);
  close(what + " grad norms", b.norms, a.norms, kF32);
  for (const auto& t : layout.tensors()) {
    std::vector<float> x(gcpu.begin() + t.offset, gcpu.begin() + t.offset + t.numel),
        y(ggpu.begin() + t.offset, ggpu.begin() + t.offset + t.numel);
    // Whole-model gradients pass through ~20 kernels: 1e-4 of the tensor's scale.
    close(what + " grad " + t.name, y, x, 1e-4);
  }
}

TEST_CASE("cuda backend (fp32): losses, gradients and grad norm match the cpu backend") {
  check_fp32_against_cpu(options(false), "fp32");
}

TEST_CASE("cuda backend: the output layer in chunks of 5 rows matches the cpu backend") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::BackendOptions chunked = options(false);
  chunked.classifier_rows = 5;  // B·T is not a multiple: the last chunk is short
  REQUIRE(kMicroBatch * cfg.seq_length % 5 != 0);
  check_fp32_against_cpu(chunked, "chunked");
  chunked.bf16 = true;
  gpt::CudaBackend whole_bf16(cfg, layout, options(true)), chunked_bf16(cfg, layout, chunked);
  const Run c = train(whole_bf16, cfg, layout, 3), d = train(chunked_bf16, cfg, layout, 3);
  close("bf16 chunked vs whole losses", d.losses, c.losses, kBF16, 0.0);
}

TEST_CASE("cuda backend: the same run twice is bitwise identical (fp32, bf16, recompute)") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  for (int mode = 0; mode < 3; ++mode) {
    CAPTURE(mode);
    const auto o = options(mode == 1, mode == 2);
    gpt::CudaBackend x(cfg, layout, o);
    const Run a = train(x, cfg, layout, 3);
    gpt::CudaBackend y(cfg, layout, o);
    const Run b = train(y, cfg, layout, 3);
    CHECK(same_bits(a.losses, b.losses));
    check_same_state(a, b);
  }
}

TEST_CASE("cuda backend: the step decided on the device gives the host path's bits (fp32, bf16, fp16)") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  for (int mode = 0; mode < 3; ++mode) {
    CAPTURE(mode);
    const float loss_scale = mode == 2 ? 1024.0f : 1.0f;
    const auto o = options(mode == 1, false, mode == 2);
    gpt::CudaBackend x(cfg, layout, o), y(cfg, layout, o);
    const Run a = train(x, cfg, layout, 3, nullptr, loss_scale);
    const Run b = train(y, cfg, layout, 3, nullptr, loss_scale, /*queued=*/true);
    std::vector<float> step_losses;
    for (int step = 0; step < 3; ++step) {
      double loss = 0;
      for (int mb = 0; mb < kAccum; ++mb) loss += a.losses[size_t(step * kAccum + mb)] / kAccum;
      step_losses.push_back(float(loss));
    }
    step_losses.push_back(a.losses.back());
    CHECK(same_bits(b.losses, step_losses));
    check_same_state(a, b);
  }
}

TEST_CASE("cuda backend: a step whose gradient norm is not finite changes nothing (end_step)") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::CudaBackend be(cfg, layout, options(false, false, true));
  std::vector<float> params(layout.total()), after(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 1234);
  be.set_params(params.data());
  const int BT = kMicroBatch * cfg.seq_length;
  auto in = randint(BT, cfg.vocab_size, 1), tgt = randint(BT, cfg.vocab_size, 2);
  be.zero_grad();
  // fp16 gradients overflow at this loss scale (as in the test below).
  be.queue_micro_batch(in.data(), tgt.data(), 4294967296.0f / BT, 1);
  const gpt::Backend::StepEnd e = be.end_step(gpt::AdamWConfig{}, 1e-3f, 1, 1.0f, 4294967296.0);
  CHECK(std::isfinite(e.loss));
  CHECK_FALSE(std::isfinite(e.norm));
  CHECK_FALSE(e.updated);
  be.get_params(after.data());
  CHECK(same_bits(after, params));
  std::vector<float> m(layout.total()), v(layout.total());
  be.get_optimizer_state(m.data(), v.data());  // still the constructor's zeros
  CHECK(same_bits(m, std::vector<float>(layout.total(), 0.0f)));
  CHECK(same_bits(v, std::vector<float>(layout.total(), 0.0f)));
}

TEST_CASE("cuda backend: recompute gives the same bits as keeping activations (fp32, bf16)") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  for (bool bf16 : {false, true}) {
    CAPTURE(bf16);
    gpt::CudaBackend keep(cfg, layout, options(bf16)), recompute(cfg, layout, options(bf16, true));
    const Run a = train(keep, cfg, layout, 2), b = train(recompute, cfg, layout, 2);
    CHECK(same_bits(a.losses, b.losses));
    CHECK(same_bits(a.params, b.params));
    CHECK(recompute.memory().allocated_mb < keep.memory().allocated_mb);
  }
}

TEST_CASE("cuda backend (bf16): split masters train as fp32 masters") {
  // The matmul weights' masters as bf16 copy + low half (the default) against an fp32 array
  // beside the copy: the same losses, moments and parameters but for the rare nudged ties
  // (kernels/master_split.h), through both AdamW call sites; get_params / set_params give the
  // same bits back (resume).
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::BackendOptions whole = options(true);
  whole.split_master = false;
  for (bool queued : {false, true}) {
    CAPTURE(queued);
    gpt::CudaBackend x(cfg, layout, whole), y(cfg, layout, options(true));
    const Run a = train(x, cfg, layout, 3, nullptr, 1.0f, queued);
    const Run b = train(y, cfg, layout, 3, nullptr, 1.0f, queued);
    close("split masters: losses", b.losses, a.losses, 1e-6, 0.0);
    close("split masters: parameters", b.params, a.params, 1e-6, 0.0);
    close("split masters: first moments", b.m, a.m, 1e-5, 1e-6);
    gpt::CudaBackend z(cfg, layout, options(true));
    z.set_params(b.params.data());
    std::vector<float> back(layout.total());
    z.get_params(back.data());
    CHECK(same_bits(back, b.params));
  }
}

namespace {
// Steps of one micro-batch each (BackendOptions::one_micro_batch_steps), as train() otherwise;
// a step without a micro-batch first (its gradients read as zeros: AdamW decays the weights).
Run train_one_micro_batch(gpt::Backend& be, const gpt::ModelConfig& cfg,
                          const gpt::ParamLayout& layout, int steps, bool queued) {
  set_start_params(be, cfg, layout);
  const int BT = kMicroBatch * cfg.seq_length;
  Run r;
  gpt::AdamWConfig opt;
  opt.weight_decay = 0.1f;
  be.zero_grad();
  be.adamw_step(opt, 1e-3f, 1, 1.0f);
  for (int step = 2; step <= steps; ++step) {
    be.zero_grad();
    auto in = randint(BT, cfg.vocab_size, 100 + step), tgt = randint(BT, cfg.vocab_size, 200 + step);
    const float weight = 1.0f / float(BT);
    if (queued) {
      be.queue_micro_batch(in.data(), tgt.data(), weight, 1);
      const gpt::Backend::StepEnd e = be.end_step(opt, 1e-3f, step, 1.0f, 1.0);
      r.losses.push_back(float(e.loss));
      r.norms.push_back(float(e.norm));
      continue;
    }
    r.losses.push_back(be.forward_backward(in.data(), tgt.data(), weight));
    const double norm = be.grad_norm();
    r.norms.push_back(float(norm));
    be.adamw_step(opt, 1e-3f, step, gpt::clip_scale(float(norm), 1.0f));
  }
  finish_run(r, be, cfg, layout);
  return r;
}
}  // namespace

TEST_CASE("cuda backend (bf16): split masters' low halves in the packed gradients' spare halves") {
  // One micro-batch per step: the low halves live in the gradient buffer; the same bits as in a
  // buffer of their own, the gradients read the same, and a second micro-batch is refused.
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::BackendOptions in_grads = options(true);
  in_grads.one_micro_batch_steps = true;
  for (bool queued : {false, true}) {
    CAPTURE(queued);
    gpt::CudaBackend own(cfg, layout, options(true)), shared(cfg, layout, in_grads);
    const Run a = train_one_micro_batch(own, cfg, layout, 4, queued);
    const Run b = train_one_micro_batch(shared, cfg, layout, 4, queued);
    CHECK(same_bits(a.losses, b.losses));
    check_same_state(a, b);
    CHECK(shared.memory().allocated_mb < own.memory().allocated_mb);
  }
  gpt::CudaBackend own(cfg, layout, options(true)), shared(cfg, layout, in_grads);
  set_start_params(own, cfg, layout);
  set_start_params(shared, cfg, layout);
  const int BT = kMicroBatch * cfg.seq_length;
  auto in = randint(BT, cfg.vocab_size, 7), tgt = randint(BT, cfg.vocab_size, 8);
  std::vector<float> ga(layout.total()), gb(layout.total());
  for (gpt::Backend* be : {static_cast<gpt::Backend*>(&own), static_cast<gpt::Backend*>(&shared)}) {
    be->zero_grad();
    be->forward_backward(in.data(), tgt.data(), 1.0f / float(BT));
  }
  own.get_grads(ga.data());
  shared.get_grads(gb.data());
  CHECK(same_bits(ga, gb));
  CHECK_THROWS(shared.forward_backward(in.data(), tgt.data(), 1.0f / float(BT)));
}

TEST_CASE("cuda backend (bf16): losses and grad norm within 2e-2 of the fp32 cpu backend") {
  // The GPT-2-like small model (flash attention, bf16 logits; the logits buffer, 128 × 128, has
  // room for the fp32 residual gradient only); head size 128 (the fp32 attention through fp32
  // copies); a vocabulary of 101 unpadded (the fp32-logits classifier); a vocabulary of 1000
  // (1024 padded: every backward-only gradient lives in the logits buffer). Head size 128 takes
  // the wide flash kernels; 136 (no flash kernel) the fp32 attention through fp32 copies.
  auto wide_heads = small_model();
  wide_heads.hidden_size = 256;
  wide_heads.num_heads = 2;
  wide_heads.ffn_hidden_size = 1024;
  auto fallback_heads = wide_heads;
  fallback_heads.hidden_size = 272;
  auto odd_vocab = small_model();
  odd_vocab.vocab_size = odd_vocab.padded_vocab_size = 101;
  auto big_vocab = small_model();
  big_vocab.vocab_size = 1000;
  big_vocab.padded_vocab_size = gpt::pad_vocab(1000);
  for (const auto& [cfg, what] :
       {std::pair{small_model(), "flash"}, std::pair{wide_heads, "hs 128"},
        std::pair{fallback_heads, "hs 136"},
        std::pair{odd_vocab, "vocab 101"}, std::pair{big_vocab, "vocab 1000"}}) {
    CAPTURE(what);
    gpt::ParamLayout layout(cfg);
    gpt::CpuBackend cpu(cfg, layout, cpu_options());
    gpt::CudaBackend gpu(cfg, layout, options(true));
    const Run a = train(cpu, cfg, layout, 3), b = train(gpu, cfg, layout, 3);
    close(std::string(what) + " bf16 step losses", b.losses, a.losses, kBF16, 0.0);
    close(std::string(what) + " bf16 grad norms", b.norms, a.norms, kBF16, 0.0);
  }
}

TEST_CASE("cuda backend (bf16): after zero_grad the gradients read as zeros until a micro-batch") {
  // With bf16 logits zero_grad leaves the weight matrices' gradients to be overwritten by the
  // next micro-batch; read before that, they must still be zeros.
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::CudaBackend gpu(cfg, layout, options(true));
  train(gpu, cfg, layout, 1);  // leaves gradients behind
  std::vector<float> g(layout.total(), 1.0f);
  gpu.zero_grad();
  gpu.get_grads(g.data());
  CHECK(std::all_of(g.begin(), g.end(), [](float x) { return x == 0.0f; }));
  CHECK(gpu.grad_norm() == 0.0);
  // And a micro-batch after zero_grad, after a step, gives the gradients of a fresh backend.
  const int BT = kMicroBatch * cfg.seq_length;
  auto in = randint(BT, cfg.vocab_size, 7), tgt = randint(BT, cfg.vocab_size, 8);
  std::vector<float> params(layout.total());
  gpu.get_params(params.data());
  gpt::CudaBackend fresh(cfg, layout, options(true));
  fresh.set_params(params.data());
  std::vector<float> a(layout.total()), b(layout.total());
  for (gpt::CudaBackend* be : {&gpu, &fresh}) {
    be->zero_grad();
    be->forward_backward(in.data(), tgt.data(), 1.0f / BT);
  }
  gpu.get_grads(a.data());
  fresh.get_grads(b.data());
  CHECK(same_bits(a, b));
}

TEST_CASE("cuda backend: CUDA graphs and GEMM autotuning change no bit, with dropout too") {
  // Graph replay runs the eager step's kernels; autotuning only picks among the candidates with
  // the heuristic's first choice's bits. Off (--cuda-graphs off --gemm-autotune off), the same
  // steps give the same losses, norms, parameters and moments. With hidden and attention
  // dropout the replays read each micro-batch's key from the device, so they drop what the eager
  // micro-batches (keys as arguments) drop.
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  for (const bool bf16 : {true, false})
    for (const float p : {0.0f, 0.1f}) {
      CAPTURE(bf16);
      CAPTURE(p);
      gpt::BackendOptions graphed = options(bf16, false, false, p);
      graphed.attention_dropout = p;
      gpt::CudaBackend tuned(cfg, layout, graphed);
      const Run a = train(tuned, cfg, layout, 4, nullptr, 1.0f, /*queued=*/true);
      gpt::BackendOptions plain_options = graphed;
      plain_options.kernels.cuda_graphs = false;
      plain_options.kernels.gemm_autotune = false;
      gpt::CudaBackend plain(cfg, layout, plain_options);
      const Run b = train(plain, cfg, layout, 4, nullptr, 1.0f, /*queued=*/true);
      CHECK(same_bits(a.losses, b.losses));
      check_same_state(a, b);
      if (p > 0) {  // dropout did drop
        gpt::CudaBackend none(cfg, layout, options(bf16));
        CHECK(train(none, cfg, layout, 4, nullptr, 1.0f, true).losses != a.losses);
      }
    }
}

TEST_CASE("cuda backend (bf16): weight gradients packed in bf16 are the fp32 ones rounded") {
  // A micro-batch after zero_grad writes the layers' weight gradients in bf16; with
  // KernelConfig::bf16_weight_grads off they stay fp32. The same batch on both: the weight
  // gradients agree within bf16 rounding (and are bf16 values), every other gradient to the bit;
  // a second micro-batch (which widens them to fp32 and adds) and the norm and update agree closely.
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::CudaBackend packed(cfg, layout, options(true));
  gpt::BackendOptions fp32_weight_grads = options(true);
  fp32_weight_grads.kernels.bf16_weight_grads = false;
  gpt::CudaBackend wide(cfg, layout, fp32_weight_grads);
  std::vector<bool> is_weight(layout.total(), false);
  for (int l = 0; l < cfg.num_layers; ++l) {
    const gpt::LayerOffsets& o = layout.layer(l);
    for (size_t w : {o.qkv_w, o.proj_w, o.fc_w, o.fc2_w})
      for (const gpt::TensorInfo& t : layout.tensors())
        if (t.offset == w) std::fill(is_weight.begin() + w, is_weight.begin() + w + t.numel, true);
  }
  const int BT = kMicroBatch * cfg.seq_length;
  std::vector<float> a(layout.total()), b(layout.total());
  for (gpt::CudaBackend* be : {&packed, &wide}) {
    set_start_params(*be, cfg, layout);
    be->zero_grad();
  }
  for (int mb = 0; mb < 2; ++mb) {
    auto in = randint(BT, cfg.vocab_size, 40 + mb), tgt = randint(BT, cfg.vocab_size, 50 + mb);
    for (gpt::CudaBackend* be : {&packed, &wide}) be->forward_backward(in.data(), tgt.data(), 1.0f / BT);
    packed.get_grads(a.data());
    wide.get_grads(b.data());
    std::vector<float> wa, wb, oa, ob;
    for (size_t i = 0; i < a.size(); ++i) {
      (is_weight[i] ? wa : oa).push_back(a[i]);
      (is_weight[i] ? wb : ob).push_back(b[i]);
    }
    const std::string what = mb == 0 ? "one micro-batch" : "two micro-batches";
    CHECK(same_bits(oa, ob));  // biases, LayerNorms, wte, wpe: no weight gradient feeds them
    if (mb == 0)
      CHECK(std::all_of(wa.begin(), wa.end(),
                        [](float x) { return __bfloat162float(__float2bfloat16_rn(x)) == x; }));
    // Two micro-batches: the first one's rounding (2^-9 of it) stays where the second cancels it.
    close(what + ": weight gradients", wa, wb, 1.0 / 128, mb == 0 ? 1e-4 : 4e-3);
  }
  CHECK(packed.grad_norm() == doctest::Approx(wide.grad_norm()).epsilon(1e-3));
  // One micro-batch per step through the trainer's path: the norms stay close, and the packed
  // run repeats to the bit on a fresh backend.
  auto run = [&](gpt::CudaBackend& be) {
    Run r;
    set_start_params(be, cfg, layout);
    const std::vector<float> zeros(layout.total(), 0.0f);
    be.set_optimizer_state(zeros.data(), zeros.data());
    gpt::AdamWConfig opt;
    for (int step = 1; step <= 3; ++step) {
      be.zero_grad();
      auto in = randint(BT, cfg.vocab_size, 60 + step), tgt = randint(BT, cfg.vocab_size, 70 + step);
      be.queue_micro_batch(in.data(), tgt.data(), 1.0f / BT, 1);
      const gpt::Backend::StepEnd e = be.end_step(opt, 1e-3f, step, 1.0f, 1.0);
      r.losses.push_back(float(e.loss));
      r.norms.push_back(float(e.norm));
    }
    finish_run(r, be, cfg, layout);
    return r;
  };
  gpt::CudaBackend packed2(cfg, layout, options(true));
  const Run p1 = run(packed), w1 = run(wide), p2 = run(packed2);
  check_same_state(p1, p2);
  close("packed against fp32 weight gradients: norms", p1.norms, w1.norms, 1e-2, 0.0);
  // (Parameters are no test here: AdamW moves a parameter whose gradient is near zero by up to lr
  // a step whatever its size, so bf16 rounding may flip its direction.)
  close("packed against fp32 weight gradients: losses", p1.losses, w1.losses, 1e-3, 0.0);
}

TEST_CASE("cuda backend: training on one batch lowers its loss; reports memory and peak") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  for (bool bf16 : {false, true}) {
    gpt::CudaBackend be(cfg, layout, options(bf16));
    std::vector<float> params(layout.total());
    gpt::init_parameters(params.data(), cfg, layout, 7);
    be.set_params(params.data());
    const int BT = kMicroBatch * cfg.seq_length;
    auto in = randint(BT, cfg.vocab_size, 1), tgt = randint(BT, cfg.vocab_size, 2);
    float first = 0, last = 0;
    for (int step = 1; step <= 30; ++step) {
      be.zero_grad();
      last = be.forward_backward(in.data(), tgt.data(), 1.0f / BT);
      if (step == 1) first = last;
      be.adamw_step(gpt::AdamWConfig{}, 3e-3f, step, gpt::clip_scale(float(be.grad_norm()), 1.0f));
    }
    MESSAGE("bf16=" << bf16 << " loss " << first << " -> " << last);
    CHECK(std::isfinite(last));
    CHECK(last < first - 0.5f);
    const auto ms = be.memory();
    CHECK(ms.allocated_mb > 0);
    CHECK(ms.max_reserved_mb >= ms.allocated_mb);
    MESSAGE(be.name() << " peak " << be.peak_tflops() << " TFLOP/s, allocated " << ms.allocated_mb
                      << " MB");
  }
}

TEST_CASE("cuda backend (fp16, loss scale 1024): losses and grad norm within 2e-2 of fp32 cpu") {
  // Head sizes 16 and 128 take the fp16 flash kernels, 136 the fp32 attention.
  auto wide_heads = small_model();
  wide_heads.hidden_size = 256;
  wide_heads.num_heads = 2;
  wide_heads.ffn_hidden_size = 1024;
  auto fallback_heads = wide_heads;
  fallback_heads.hidden_size = 272;
  for (const auto& [cfg, what, path] :
       {std::tuple{small_model(), "hs 16", "flash mma.sync (fp16"},
        std::tuple{wide_heads, "hs 128", "flash mma.sync (fp16"},
        std::tuple{fallback_heads, "hs 136", "fp32 fallback"}}) {
    CAPTURE(what);
    gpt::ParamLayout layout(cfg);
    gpt::CpuBackend cpu(cfg, layout, cpu_options());
    gpt::CudaBackend gpu(cfg, layout, options(false, false, true));
    CHECK(gpu.name().find("fp16") != std::string::npos);
    CHECK_MESSAGE(gpu.attention_path().find(path) == 0, gpu.attention_path());
    const Run a = train(cpu, cfg, layout, 3), b = train(gpu, cfg, layout, 3, nullptr, 1024.0f);
    close(std::string(what) + " fp16 step losses", b.losses, a.losses, kBF16, 0.0);
    close(std::string(what) + " fp16 grad norms", b.norms, a.norms, kBF16, 0.0);
    // the same run again: bitwise identical
    gpt::CudaBackend again(cfg, layout, options(false, false, true));
    const Run c = train(again, cfg, layout, 3, nullptr, 1024.0f);
    CHECK(same_bits(b.losses, c.losses));
    CHECK(same_bits(b.params, c.params));
  }
}

TEST_CASE("cuda backend (bf16, hs 128): every flash tile shape within 2e-2 of the fp32 cpu") {
  // KernelConfig::flash_tiles (gpt-train --flash-tiles) reaches the kernels and the printed path;
  // on sm_90 the wgmma kernels too.
  auto cfg = small_model();
  cfg.hidden_size = 256;
  cfg.num_heads = 2;
  cfg.ffn_hidden_size = 1024;
  gpt::ParamLayout layout(cfg);
  gpt::CpuBackend cpu(cfg, layout, cpu_options());
  const Run a = train(cpu, cfg, layout, 3);
  int device = 0, smem = 0;
  GPT_CUDA_CHECK(cudaGetDevice(&device));
  GPT_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  for (int v = 0; v < gpt::kFlashTileCount; ++v) {
    const gpt::FlashTiles& t = gpt::kFlashTiles[v];
    CAPTURE(t.name);
    // Shapes beyond this device's shared memory are skipped, as in flash_attention_test.
    if (size_t(3 * 16 * t.warps + 4 * t.keys) * 136 * 2 > size_t(smem)) continue;
    gpt::BackendOptions o = options(true);
    o.kernels.flash_tiles = v;
    o.kernels.sm90_attention = false;  // head size 128 would take the Hopper kernels on sm_90
    gpt::CudaBackend gpu(cfg, layout, o);
    CHECK_MESSAGE(gpu.attention_path().find(std::string("tiles ") + t.name) != std::string::npos,
                  gpu.attention_path());
    const Run b = train(gpu, cfg, layout, 3);
    close(std::string(t.name) + " bf16 step losses", b.losses, a.losses, kBF16, 0.0);
    close(std::string(t.name) + " bf16 grad norms", b.norms, a.norms, kBF16, 0.0);
  }
  if (gpt::cuda::sm90_available()) {  // the default on sm_90: the Hopper kernels, no tile shape
    gpt::CudaBackend gpu(cfg, layout, options(true));
    CHECK_MESSAGE(gpu.attention_path().rfind("flash sm90 (wgmma, head size 128", 0) == 0,
                  gpu.attention_path());
    const Run b = train(gpu, cfg, layout, 3);
    close("wgmma bf16 step losses", b.losses, a.losses, kBF16, 0.0);
    close("wgmma bf16 grad norms", b.norms, a.norms, kBF16, 0.0);
  }
}

TEST_CASE("cuda backend (fp16): a loss scale beyond fp16's range gives an infinite grad norm") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::CudaBackend be(cfg, layout, options(false, false, true));
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 1234);
  be.set_params(params.data());
  const int BT = kMicroBatch * cfg.seq_length;
  auto in = randint(BT, cfg.vocab_size, 1), tgt = randint(BT, cfg.vocab_size, 2);
  be.zero_grad();
  const float loss = be.forward_backward(in.data(), tgt.data(), 4294967296.0f / BT);
  CHECK(std::isfinite(loss));
  CHECK_FALSE(std::isfinite(be.grad_norm()));
}

TEST_CASE("cuda backend: hidden dropout matches the cpu backend (same masks); recompute keeps them") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::CpuBackend cpu(cfg, layout, cpu_options(0.1f));
  gpt::CudaBackend gpu(cfg, layout, options(false, false, false, 0.1f));
  std::vector<float> gcpu, ggpu;
  const Run a = train(cpu, cfg, layout, 3, &gcpu), b = train(gpu, cfg, layout, 3, &ggpu);
  close("dropout step losses", b.losses, a.losses, kF32);
  close("dropout grad norms", b.norms, a.norms, kF32);
  gpt::CpuBackend plain(cfg, layout, options(false));
  CHECK(train(plain, cfg, layout, 1).losses[0] != a.losses[0]);  // dropout did drop
  gpt::CudaBackend rc(cfg, layout, options(false, true, false, 0.1f));
  const Run c = train(rc, cfg, layout, 3);
  CHECK(same_bits(b.losses, c.losses));
  CHECK(same_bits(b.params, c.params));
  gpt::CudaBackend bf(cfg, layout, options(true, false, false, 0.1f));
  close("dropout bf16 step losses", train(bf, cfg, layout, 3).losses, a.losses, kBF16, 0.0);
}

TEST_CASE("cuda backend: attention dropout matches the cpu backend (same masks), repeats") {
  // fp32 (the materialising attention with its dropped copy), then --bf16 with head sizes 16
  // (flash, hs <= 64), 128 (the wide flash kernels) and 136 (the fp32 attention via fp32 copies).
  auto with_att = [](gpt::BackendOptions o) {
    o.attention_dropout = 0.1f;
    return o;
  };
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::CpuBackend cpu(cfg, layout, with_att(cpu_options(0.1f)));
  gpt::CudaBackend gpu(cfg, layout, with_att(options(false, false, false, 0.1f)));
  std::vector<float> gcpu, ggpu;
  const Run a = train(cpu, cfg, layout, 3, &gcpu), b = train(gpu, cfg, layout, 3, &ggpu);
  close("attention dropout step losses", b.losses, a.losses, kF32);
  close("attention dropout grad norms", b.norms, a.norms, kF32);
  for (const auto& t : layout.tensors()) {
    std::vector<float> x(gcpu.begin() + t.offset, gcpu.begin() + t.offset + t.numel),
        y(ggpu.begin() + t.offset, ggpu.begin() + t.offset + t.numel);
    close("attention dropout grad " + t.name, y, x, 1e-4);
  }
  gpt::CpuBackend hidden_only(cfg, layout, cpu_options(0.1f));
  CHECK(train(hidden_only, cfg, layout, 1).losses[0] != a.losses[0]);  // attention dropout dropped
  gpt::CudaBackend rc(cfg, layout, with_att(options(false, true, false, 0.1f)));
  const Run c = train(rc, cfg, layout, 3);
  CHECK(same_bits(b.losses, c.losses));
  CHECK(same_bits(b.params, c.params));

  auto wide_heads = cfg;
  wide_heads.hidden_size = 256;
  wide_heads.num_heads = 2;
  wide_heads.ffn_hidden_size = 1024;
  auto fallback_heads = wide_heads;
  fallback_heads.hidden_size = 272;
  for (const auto& [m, what] : {std::pair{cfg, "hs 16"}, std::pair{wide_heads, "hs 128"},
                                std::pair{fallback_heads, "hs 136"}}) {
    CAPTURE(what);
    gpt::ParamLayout lm(m);
    gpt::CpuBackend ref(m, lm, with_att(cpu_options(0.1f)));
    const Run r = train(ref, m, lm, 3);
    gpt::CudaBackend bf(m, lm, with_att(options(true, false, false, 0.1f)));
    const Run x = train(bf, m, lm, 3);
    close(std::string(what) + " bf16 attention dropout step losses", x.losses, r.losses, kBF16,
          0.0);
    gpt::CudaBackend again(m, lm, with_att(options(true, false, false, 0.1f)));
    const Run y = train(again, m, lm, 3);
    CHECK(same_bits(x.losses, y.losses));  // bitwise run to run
    check_same_state(x, y);
    gpt::CudaBackend rcb(m, lm, with_att(options(true, true, false, 0.1f)));
    CHECK(same_bits(train(rcb, m, lm, 3).losses, x.losses));  // recompute: the same masks
    // --fp16 (flash with fp16 operands for 16 and 128; 136 the fp32 attention), loss scale 1024.
    gpt::CudaBackend hf(m, lm, with_att(options(false, false, true, 0.1f)));
    const Run h = train(hf, m, lm, 3, nullptr, 1024.0f);
    close(std::string(what) + " fp16 attention dropout step losses", h.losses, r.losses, kBF16,
          0.0);
    gpt::CudaBackend hf2(m, lm, with_att(options(false, false, true, 0.1f)));
    CHECK(same_bits(train(hf2, m, lm, 3, nullptr, 1024.0f).losses, h.losses));
    gpt::CudaBackend rch(m, lm, with_att(options(false, true, true, 0.1f)));
    CHECK(same_bits(train(rch, m, lm, 3, nullptr, 1024.0f).losses, h.losses));
  }
}

TEST_CASE("cuda backend: out-of-range tokens are a clear error") {
  const auto cfg = small_model();
  gpt::ParamLayout layout(cfg);
  gpt::CudaBackend be(cfg, layout, options(false));
  std::vector<int> in(kMicroBatch * cfg.seq_length, 1), tgt(in.size(), 1);
  in[5] = cfg.vocab_size;
  CHECK_THROWS_AS(be.forward_backward(in.data(), tgt.data(), 1.0f), suite::ToolError);
}
