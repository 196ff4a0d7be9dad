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

TEST_CASE("buffer plan: --bf16 split masters keep fp32 only beside the matmul weights") {
  const gpt::ModelConfig cfg = model();
  const gpt::ParamLayout layout(cfg);
  const size_t n = layout.total();
  gpt::BufferPlanOptions o;
  o.bf16 = true;
  o.split_master = true;
  const gpt::BufferPlan p = gpt::plan_buffers(cfg, n, o);
  // Each layer's qkv, proj, fc and fc2 weights: 12·C² of a layer's parameters.
  const auto split = gpt::split_master_tensors(layout);
  REQUIRE(split.size() == size_t(4 * cfg.num_layers));
  size_t m = 0;
  for (const auto& [begin, end] : split) m += end - begin;
  CHECK(m == size_t(cfg.num_layers) * 12 * 64 * 64);
  // The fp32-read tensors fill the gaps: together with the split ones, [0, n) once each.
  const auto fp32 = gpt::fp32_read_tensors(layout);
  size_t covered = 0;
  for (const auto& [begin, end] : fp32) covered += end - begin;
  CHECK(covered + m == n);
  CHECK(fp32.front().first == 0);
  CHECK(fp32.back().second == n);
  // fp32 for the rest, and 4 pages of 2 MiB per layer where the small tensors sit.
  const size_t pages = size_t(cfg.num_layers) * 4 * (2 << 20);
  CHECK(p.find("params")->bytes == 4 * (n - m) + pages);
  CHECK(p.find("params_lo")->bytes == 2 * m);
  CHECK(p.bytes(gpt::BufferKind::kWeights) == 4 * (n - m) + pages + 2 * n + 2 * m);
  o.split_master = false;  // the distributed optimizer's plan: fp32 beside the bf16 copy
  CHECK(gpt::plan_buffers(cfg, n, o).find("params_lo") == nullptr);
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

namespace {

gpt::StageSpec stage(int first, int layers, bool embedding, bool head, int tp = 1, int rank = 0) {
  gpt::StageSpec s;
  s.first_layer = first;
  s.num_layers = layers;
  s.has_embedding = embedding;
  s.has_head = head;
  s.tp_size = tp;
  s.tp_rank = rank;
  return s;
}

bool same_buffer(const gpt::PlannedBuffer& a, const gpt::PlannedBuffer& b) {
  return a.name == b.name && a.kind == b.kind && a.bytes == b.bytes && a.lives_in == b.lives_in;
}

}  // namespace

TEST_CASE("buffer plan: pipeline slots repeat what a micro-batch keeps, after the one-slot plan") {
  const gpt::ModelConfig cfg = model(4);
  const size_t n = gpt::ParamLayout(cfg).total();
  for (bool bf16 : {false, true}) {
    for (bool recompute : {false, true}) {
      CAPTURE(bf16);
      CAPTURE(recompute);
      gpt::BufferPlanOptions o;
      o.micro_batch = 2;
      o.bf16 = o.flash_attention = bf16;
      o.recompute_activations = recompute;
      const gpt::BufferPlan one = gpt::plan_buffers(cfg, n, o);
      o.slots = 3;
      const gpt::BufferPlan three = gpt::plan_buffers(cfg, n, o);
      // The one-slot plan is unchanged, in order, at the front.
      REQUIRE(three.buffers.size() > one.buffers.size());
      for (size_t i = 0; i < one.buffers.size(); ++i)
        CHECK(same_buffer(one.buffers[i], three.buffers[i]));
      // Each further slot: every layer's output, the stage input, the final LayerNorm, tokens.
      for (const char* s : {"slot1.", "slot2."}) {
        const std::string p = s;
        for (const char* b : {"layer0.res3", "layer3.res3", "encoded", "lnf", "lnf_mean",
                              "inputs", "targets"})
          CHECK(three.find(p + b) != nullptr);
        // Recompute shares the one recomputation slot between the micro-batches.
        CHECK((three.find(p + "layer3.ln1") != nullptr) == !recompute);
        CHECK(count_named(three, p) == count_named(three, "slot1."));
      }
      CHECK(three.find("slot3.encoded") == nullptr);
      // Nothing but activations grows; the gradients, logits and workspace are shared.
      for (auto k : {gpt::BufferKind::kWeights, gpt::BufferKind::kGradients,
                     gpt::BufferKind::kOptimizer, gpt::BufferKind::kWorkspace})
        CHECK(three.bytes(k) == one.bytes(k));
      size_t slot_bytes = 0;
      for (const gpt::PlannedBuffer& b : three.buffers)
        if (b.name.rfind("slot1.", 0) == 0) slot_bytes += b.bytes;
      CHECK(three.bytes(gpt::BufferKind::kActivations) ==
            one.bytes(gpt::BufferKind::kActivations) + 2 * slot_bytes);
    }
  }
}

TEST_CASE("buffer plan: a pipeline stage holds its layers, the ends only where they are") {
  const gpt::ModelConfig cfg = model(4);
  gpt::BufferPlanOptions o;
  o.micro_batch = 2;
  o.bf16 = o.flash_attention = true;
  o.stage_buffers = 6;
  // A middle stage of layers [1, 3): no embedding, no output layer.
  o.stage = stage(1, 2, false, false);
  const gpt::BufferPlan mid = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg, o.stage).total(), o);
  CHECK(mid.find("layer1.res3") != nullptr);
  CHECK(mid.find("layer2.res3") == nullptr);  // local layer indices
  CHECK(mid.find("logits_bf16") == nullptr);
  CHECK(mid.find("lnf") == nullptr);
  CHECK(mid.find("encoded") != nullptr);     // the received activation in fp32
  CHECK(mid.find("dres") != nullptr);        // no logits to carve from: its own
  CHECK(mid.find("dres")->lives_in.empty());
  // Boundary buffers of [B·T, C] in bf16.
  CHECK(mid.find("stage5")->bytes == size_t(2) * 32 * 64 * 2);
  CHECK(mid.find("stage6") == nullptr);
  // The first stage with no layers: the embedding only; its wte gradient is only added to, so
  // zero_grad's span table exists; the last stage writes it.
  o.stage = stage(0, 0, true, false);
  const gpt::BufferPlan first = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg, o.stage).total(), o);
  CHECK(first.find("layer0.ln1") == nullptr);
  CHECK(first.find("added_grad_spans") != nullptr);
  CHECK(first.find("packed_spans") == nullptr);
  o.stage = stage(0, 4, false, true);
  const gpt::BufferPlan last = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg, o.stage).total(), o);
  CHECK(last.find("logits_bf16") != nullptr);
  CHECK(last.find("lnf") != nullptr);
  CHECK(last.find("packed_spans") != nullptr);
}

TEST_CASE("buffer plan: tensor parallelism keeps a rank's heads, FFN columns and vocabulary rows") {
  const gpt::ModelConfig cfg = model();
  gpt::BufferPlanOptions o;
  o.micro_batch = 2;
  const gpt::BufferPlan one = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg).total(), o);
  o.stage = stage(0, -1, true, true, 2, 1);
  const gpt::BufferPlan two = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg, o.stage).total(), o);
  for (const char* b : {"layer0.qkv", "layer0.att", "layer0.atty", "layer0.fch", "logits", "dqkv",
                        "dfch", "datty"}) {
    CAPTURE(b);
    CHECK(2 * two.find(b)->bytes == one.find(b)->bytes);
  }
  for (const char* b : {"layer0.ln1", "layer0.res2", "layer0.res3", "encoded", "dln", "dres"}) {
    CAPTURE(b);
    CHECK(two.find(b)->bytes == one.find(b)->bytes);
  }
  // --bf16: the input gradients are summed over the ranks in bf16, in dln_bf16 (the wire dtype
  // is the activations'); an fp32 dln only for fp32 logits (this rank's rows not a multiple of 8).
  o.bf16 = o.flash_attention = true;
  const gpt::BufferPlan bf16 = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg, o.stage).total(), o);
  CHECK(bf16.find("dln") == nullptr);
  REQUIRE(bf16.find("dln_bf16") != nullptr);
  CHECK(bf16.find("dln_bf16")->bytes == size_t(2) * 32 * 64 * 2);
  gpt::ModelConfig odd = cfg;
  odd.padded_vocab_size = 1028;
  CHECK(gpt::plan_buffers(odd, gpt::ParamLayout(odd, o.stage).total(), o).find("dln") != nullptr);
  o.stage = gpt::StageSpec{};
  CHECK(gpt::plan_buffers(cfg, gpt::ParamLayout(cfg).total(), o).find("dln") == nullptr);
}

TEST_CASE("buffer plan: sequence parallelism keeps a rank's rows of the residual stream") {
  const gpt::ModelConfig cfg = model();
  gpt::BufferPlanOptions o;
  o.micro_batch = 2;
  o.stage = stage(0, -1, true, true, 2, 0);
  const gpt::BufferPlan tp = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg, o.stage).total(), o);
  o.stage.sequence_parallel = true;
  const gpt::BufferPlan sp = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg, o.stage).total(), o);
  for (const char* b : {"layer0.res2", "layer1.res3", "layer0.ln1_mean", "encoded", "lnf_rstd",
                        "dres"}) {
    CAPTURE(b);
    CHECK(2 * sp.find(b)->bytes == tp.find(b)->bytes);
  }
  // The gathered LayerNorm outputs and the products stay whole.
  for (const char* b : {"layer0.ln1", "layer0.qkv", "lnf", "dln"}) {
    CAPTURE(b);
    CHECK(sp.find(b)->bytes == tp.find(b)->bytes);
  }
  // The replicated tensors' gradients held aside and summed per backward: per layer two
  // LayerNorms and two row-parallel biases, the position embedding, the final LayerNorm.
  const size_t C = 64;
  CHECK(tp.find("sp_grads") == nullptr);
  CHECK(sp.find("sp_grads")->bytes == 2 * 4 * (2 * 6 * C + 32 * C + 2 * C));
}
