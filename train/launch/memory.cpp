#include "train/launch/memory.h"

#include <algorithm>
#include <string>

#include "kernels/flash_tiles.h"
#include "train/backend/cuda/buffer_plan.h"
#include "train/model/config.h"
#include "train/model/layout.h"

namespace launch {

MemoryEstimate estimate_memory(const Preset& p, int tp, int pp, int dp) {
  gpt::ModelConfig cfg;
  const int layers = static_cast<int>(p.get_int("num-layers", 1));
  cfg.num_layers = std::max(1, layers / std::max(1, pp));
  cfg.hidden_size = static_cast<int>(p.get_int("hidden-size", 1));
  cfg.num_heads = static_cast<int>(p.get_int("num-attention-heads", 1));
  cfg.ffn_hidden_size = static_cast<int>(p.get_int("ffn-hidden-size", 4L * cfg.hidden_size));
  if (cfg.ffn_hidden_size == 0) cfg.ffn_hidden_size = 4 * cfg.hidden_size;
  cfg.seq_length = static_cast<int>(p.get_int("seq-length", 1));
  cfg.max_position_embeddings = static_cast<int>(p.get_int("max-position-embeddings", cfg.seq_length));
  if (cfg.max_position_embeddings == 0) cfg.max_position_embeddings = cfg.seq_length;
  cfg.vocab_size = static_cast<int>(p.get_int("vocab-size", 50257));
  cfg.padded_vocab_size =
      gpt::pad_vocab(cfg.vocab_size, tp, static_cast<int>(p.get_int("make-vocab-size-divisible-by", 128)));
  const size_t n = gpt::ParamLayout(cfg).total();

  gpt::BufferPlanOptions o;
  o.micro_batch = static_cast<int>(p.get_int("micro-batch-size", 1));
  o.bf16 = p.get("bf16") == "true";
  o.fp16 = p.get("fp16") == "true";
  o.recompute_gelu_layers = static_cast<int>(p.get_int("recompute-gelu-layers", -1));
  o.classifier_rows = static_cast<int>(p.get_int("classifier-rows", 4096));
  o.hidden_dropout = std::stof(p.get("hidden-dropout", "0"));
  // The flash kernels' rule (kernels/flash_tiles.h): bf16 or fp16 and a head size they take.
  o.flash_attention = (o.bf16 || o.fp16) && gpt::flash_shape_ok(cfg.hidden_size, cfg.num_heads);
  // Without the distributed optimizer the CUDA backend splits the matmul weights' masters; on one
  // GPU with one micro-batch per step their low halves live in the gradient buffer.
  o.split_master = o.bf16;
  o.lo_in_grads = o.split_master && tp * pp * dp == 1 &&
                  p.get_int("global-batch-size", o.micro_batch) == o.micro_batch;
  const gpt::BufferPlan plain = gpt::plan_buffers(cfg, n, o);
  o.recompute_activations = true;
  const gpt::BufferPlan recompute = gpt::plan_buffers(cfg, n, o);

  using K = gpt::BufferKind;
  const double t = std::max(1, tp);
  MemoryEstimate m;
  m.stage_parameters = n;
  m.weights = plain.bytes(K::kWeights) / t;
  m.gradients = plain.bytes(K::kGradients) / t;
  m.optimizer = plain.bytes(K::kOptimizer) / t;
  m.optimizer_distributed = m.optimizer / std::max(1, dp);
  m.weights_distributed = m.weights;
  if (o.bf16 && dp > 1) {
    // The CUDA backend's sharded master (cuda_backend_sparse.cu): fp32 for the owned 1/D, for
    // the rest of the tensors read in fp32 (all but the layers' matmul weights), and for the
    // pages those small tensors share with matmul weights (about 4 groups of them per layer).
    const double C = cfg.hidden_size, F = cfg.ffn_hidden_size;
    const double matmul = cfg.num_layers * (4 * C * C + 2 * C * F);
    const double kept = (double(n) - matmul) + cfg.num_layers * 4 * (2 << 20) / 4.0;
    const double d = dp, fp32 = 4.0 * double(n);
    gpt::BufferPlanOptions whole = o;  // the distributed optimizer's: no split masters
    whole.split_master = false;
    whole.recompute_activations = false;
    const double unsplit = double(gpt::plan_buffers(cfg, n, whole).bytes(K::kWeights));
    m.weights_distributed = (unsplit - fp32 +
                             4 * (double(n) / d + std::min(double(n), kept) * (1 - 1 / d))) / t;
  }
  m.activations = plain.bytes(K::kActivations) / t;
  m.activations_recompute = recompute.bytes(K::kActivations) / t;
  m.workspace = plain.bytes(K::kWorkspace) / t;
  return m;
}

}  // namespace launch
