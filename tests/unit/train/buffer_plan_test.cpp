// The CUDA backend's buffer plan (train/backend/cuda/buffer_plan.h) and its out-of-memory message,
// on the CPU.
#include "train/backend/cuda/buffer_plan.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "train/model/layout.h"

namespace {

gpt::ModelConfig model(int layers = 2, int hidden = 64, int heads = 4, int seq = 32) {
  gpt::ModelConfig c;
  c.num_layers = layers;
  c.hidden_size = hidden;
  c.num_heads = heads;
  c.ffn_hidden_size = 4 * hidden;
  c.seq_length = seq;
  c.max_position_embeddings = seq;
  c.vocab_size = 1000;
  c.padded_vocab_size = 1024;
  return c;
}

size_t count_named(const gpt::BufferPlan& p, const std::string& prefix) {
  return std::count_if(p.buffers.begin(), p.buffers.end(),
                       [&](const gpt::PlannedBuffer& b) { return b.name.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST_CASE("buffer plan: fp32 model state and activations by kind") {
  const gpt::ModelConfig cfg = model();
  const size_t n = gpt::ParamLayout(cfg).total();
  gpt::BufferPlanOptions o;
  o.micro_batch = 2;
  const gpt::BufferPlan p = gpt::plan_buffers(cfg, n, o);
  CHECK(p.bytes(gpt::BufferKind::kWeights) == 4 * n);
  CHECK(p.bytes(gpt::BufferKind::kGradients) == 4 * n);
  CHECK(p.bytes(gpt::BufferKind::kOptimizer) > 8 * n);  // moments and the span table
  CHECK(p.bytes(gpt::BufferKind::kOptimizer) < 8 * n + 4096);
  size_t sum = 0;
  for (auto k :
       {gpt::BufferKind::kWeights, gpt::BufferKind::kGradients, gpt::BufferKind::kOptimizer,
        gpt::BufferKind::kActivations, gpt::BufferKind::kWorkspace})
    sum += p.bytes(k);
  CHECK(sum == p.total_bytes());
  // fp32 attention keeps att [B,NH,T,T] per layer; nothing is carved.
  REQUIRE(p.find("layer1.att") != nullptr);
  CHECK(p.find("layer1.att")->bytes == size_t(2) * 4 * 32 * 32 * 4);
  CHECK(p.find("layer0.lse") == nullptr);
  for (const gpt::PlannedBuffer& b : p.buffers) CHECK(b.lives_in.empty());
  // The fp32 logits chunk: min(B·T, classifier rows) rows of the padded vocabulary.
  CHECK(p.find("logits")->bytes == size_t(64) * 1024 * 4);
}

TEST_CASE("buffer plan: --bf16 carves the backward's gradients out of the logits") {
  const gpt::ModelConfig cfg = model();
  const size_t n = gpt::ParamLayout(cfg).total();
  gpt::BufferPlanOptions o;
  o.micro_batch = 2;
  o.bf16 = true;
  o.flash_attention = true;
  o.hidden_dropout = 0.1f;
  const gpt::BufferPlan p = gpt::plan_buffers(cfg, n, o);
  CHECK(p.bytes(gpt::BufferKind::kWeights) == 6 * n);  // fp32 and the bf16 copy
  CHECK(p.find("layer0.att") == nullptr);
  CHECK(p.find("layer0.lse")->bytes == size_t(2) * 4 * 32 * 4);
  // Every layer recomputes its GELU output by default: one shared buffer.
  CHECK(p.find("gelu_shared") != nullptr);
  CHECK(count_named(p, "layer0.fch_gelu") == 0);
  const gpt::PlannedBuffer* room = p.find("logits_bf16");
  REQUIRE(room != nullptr);
  const std::vector<size_t> offsets = gpt::carve_offsets(p);
  size_t carved = 0, end = 0;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const gpt::PlannedBuffer& b = p.buffers[i];
    if (b.lives_in.empty()) continue;
    CHECK(b.lives_in == "logits_bf16");
    CHECK(offsets[i] % 256 == 0);
    CHECK(offsets[i] >= end);  // in order, no overlap
    end = offsets[i] + b.bytes;
    CHECK(end <= room->bytes);
    ++carved;
  }
  CHECK(carved >= 3);
  // Carved buffers add nothing to the totals.
  size_t own = 0;
  for (const gpt::PlannedBuffer& b : p.buffers)
    if (b.lives_in.empty()) own += b.bytes;
  CHECK(own == p.total_bytes());
  // A one-row chunk has no room: each gradient gets its own allocation.
  o.classifier_rows = 1;
  for (const gpt::PlannedBuffer& b : gpt::plan_buffers(cfg, n, o).buffers)
    CHECK(b.lives_in.empty());
}

TEST_CASE("buffer plan: recompute keeps one activation slot and each layer's output") {
  const gpt::ModelConfig cfg = model(4);
  const size_t n = gpt::ParamLayout(cfg).total();
  gpt::BufferPlanOptions o;
  o.micro_batch = 2;
  const gpt::BufferPlan full = gpt::plan_buffers(cfg, n, o);
  o.recompute_activations = true;
  const gpt::BufferPlan slot = gpt::plan_buffers(cfg, n, o);
  CHECK(count_named(full, "layer3.") == count_named(full, "layer0."));
  CHECK(count_named(slot, "layer3.") == 1);
  CHECK(slot.find("layer3.res3") != nullptr);
  CHECK(slot.bytes(gpt::BufferKind::kActivations) < full.bytes(gpt::BufferKind::kActivations));
  CHECK(slot.bytes(gpt::BufferKind::kWeights) == full.bytes(gpt::BufferKind::kWeights));
}

TEST_CASE("out-of-memory message: what does not fit, and advice that applies") {
  const gpt::ModelConfig cfg = model();
  const size_t n = gpt::ParamLayout(cfg).total();
  gpt::BufferPlanOptions o;
  o.micro_batch = 8;
  o.bf16 = true;
  const gpt::BufferPlan p = gpt::plan_buffers(cfg, n, o);
  const size_t state = p.bytes(gpt::BufferKind::kWeights) + p.bytes(gpt::BufferKind::kGradients) +
                       p.bytes(gpt::BufferKind::kOptimizer);
  REQUIRE(state < p.total_bytes());

  // The model state fits, the activations do not: a smaller micro-batch is the advice.
  const std::string act = gpt::out_of_memory_message(p, state + 1024, "layer1.qkv", o);
  CHECK(act.find("allocating layer1.qkv") != std::string::npos);
  for (const char* part :
       {"weights ", "gradients ", "optimizer state ", "activations ", "workspace ", "free"})
    CHECK(act.find(part) != std::string::npos);
  CHECK(act.find("--micro-batch-size (now 8)") != std::string::npos);
  CHECK(act.find("--recompute-activations") != std::string::npos);
  CHECK(act.find("no micro-batch size helps") == std::string::npos);
  CHECK(act.find('\n') == std::string::npos);

  // Weights, gradients and optimizer state alone exceed the card: no micro-batch advice.
  const std::string state_msg = gpt::out_of_memory_message(p, state / 2, "adam_v", o);
  CHECK(state_msg.find("alone") != std::string::npos);
  CHECK(state_msg.find("no micro-batch size helps") != std::string::npos);
  CHECK(state_msg.find("--micro-batch-size") == std::string::npos);

  // With recompute already on, it is not advised again.
  o.recompute_activations = true;
  const std::string rc =
      gpt::out_of_memory_message(gpt::plan_buffers(cfg, n, o), state + 1024, "", o);
  CHECK(rc.find("--recompute-activations") == std::string::npos);
  CHECK(rc.find("allocating") == std::string::npos);
}
