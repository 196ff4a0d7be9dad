#include "train/plan/stage_memory.h"

#include <algorithm>

#include "kernels/flash_tiles.h"
#include "train/backend/cuda/buffer_plan.h"
#include "train/model/config.h"
#include "train/model/layout.h"

namespace plan {
namespace {

MemoryParts parts(const ModelShape& m, int layers, int micro_batch, int tp, bool recompute) {
  gpt::ModelConfig cfg;
  cfg.num_layers = layers;
  cfg.hidden_size = m.hidden;
  cfg.num_heads = m.heads;
  cfg.ffn_hidden_size = m.ffn;
  cfg.seq_length = m.seq;
  cfg.max_position_embeddings = m.max_positions;
  cfg.vocab_size = m.vocab;
  cfg.padded_vocab_size = m.padded_vocab(tp);
  gpt::BufferPlanOptions o;
  o.micro_batch = micro_batch;
  o.bf16 = m.bf16;
  o.split_master = m.bf16;  // as the CUDA backend holds the matmul weights without sharding
  o.recompute_activations = recompute;
  o.hidden_dropout = float(m.hidden_dropout);
  o.flash_attention = o.bf16 && gpt::flash_shape_ok(m.hidden, m.heads);  // lse, not att [B,NH,T,T]
  const gpt::BufferPlan p = gpt::plan_buffers(cfg, gpt::ParamLayout(cfg).total(), o);
  using K = gpt::BufferKind;
  return {double(p.bytes(K::kWeights)), double(p.bytes(K::kGradients)), double(p.bytes(K::kOptimizer)),
          double(p.bytes(K::kActivations)), double(p.bytes(K::kWorkspace))};
}

MemoryParts minus(const MemoryParts& a, const MemoryParts& b) {
  return {a.weights - b.weights, a.gradients - b.gradients, a.optimizer - b.optimizer,
          a.activations - b.activations, a.workspace - b.workspace};
}

}  // namespace

StageMemory::StageMemory(const ModelShape& m, int micro_batch, int tp, bool recompute) : tp_(std::max(1, tp)) {
  const MemoryParts one = parts(m, 1, micro_batch, tp, recompute), two = parts(m, 2, micro_batch, tp, recompute);
  layer_ = minus(two, one);
  fixed_ = minus(one, layer_);
}

MemoryParts StageMemory::stage(int layers, int in_flight, int optimizer_shards, double layer_act) const {
  const double t = tp_, k = layers;
  MemoryParts out;
  out.weights = (fixed_.weights + k * layer_.weights) / t;
  out.gradients = (fixed_.gradients + k * layer_.gradients) / t;
  out.optimizer = (fixed_.optimizer + k * layer_.optimizer) / t / std::max(1, optimizer_shards);
  const double per_layer = layer_act >= 0 ? layer_act : layer_.activations / t;
  out.activations = fixed_.activations / t + k * per_layer * std::max(1, in_flight);
  out.workspace = fixed_.workspace / t;
  return out;
}

}  // namespace plan
