// The CUDA backend's device memory, planned before anything is allocated: every buffer's name,
// size and role, and which buffers are carved out of another one (the backward's bf16 gradients
// live in the classifier's logits buffer once the classifier is done with it). CudaBackend
// allocates exactly this plan, in this order; a memory estimate reads it on any machine (plain
// C++, built without CUDA too).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "train/model/config.h"
#include "train/model/layout.h"

namespace gpt {

enum class BufferKind { kWeights, kGradients, kOptimizer, kActivations, kWorkspace };

struct PlannedBuffer {
  std::string name;
  BufferKind kind;
  size_t bytes;
  // "": its own allocation; else the name of the buffer it is carved from (at the next 256-byte
  // boundary after the buffers carved from it before; see carve_offsets).
  std::string lives_in;
};

// What the plan depends on besides the model (BackendOptions, and what the backend derives).
struct BufferPlanOptions {
  int micro_batch = 1;
  bool bf16 = false, fp16 = false, recompute_activations = false;
  int recompute_gelu_layers = -1;  // --bf16: the first N layers share one GELU output; -1 all
  int classifier_rows = 4096;
  float hidden_dropout = 0;
  bool flash_attention = false;   // --bf16 with a head size the flash kernels take: no att
  bool pack_weight_grads = true;  // --bf16-weight-grads
  // --bf16 without the distributed optimizer: the layers' matmul weights keep their fp32 master
  // as the bf16 copy plus a low half ("params_lo", packed tensor after tensor;
  // kernels/master_split.h), and "params" holds only the other tensors and the padding in fp32.
  bool split_master = false;
  // ... with the low halves in the packed weight gradients' unused halves (BackendOptions::
  // one_micro_batch_steps): no "params_lo".
  bool lo_in_grads = false;
  // Data parallelism: zeroed elements after the parameters in the flat parameter and gradient
  // buffers (buckets split evenly over the ranks), and the AdamW moments this rank keeps (the
  // distributed optimizer's shard; 0: one per flat element).
  size_t flat_padding = 0;
  size_t optimizer_elements = 0;
  // Tensor and pipeline parallelism (BackendOptions::stage / pipeline_slots): this rank's layers,
  // heads, FFN columns and vocabulary rows (num_params is then ParamLayout(config, stage)'s);
  // slots - 1 more copies of what a micro-batch keeps for its backward ("slot<s>." names, after
  // everything else, so that the one-slot plan is unchanged); stage_buffers boundary activations
  // of [B·T, C] in the compute dtype ("stage<i>").
  StageSpec stage = {};
  int slots = 1;
  int stage_buffers = 0;
};

struct BufferPlan {
  std::vector<PlannedBuffer> buffers;  // in allocation order
  // Bytes of the own allocations of one kind, and of all of them (carved buffers add nothing).
  size_t bytes(BufferKind k) const;
  size_t total_bytes() const;
  // The buffer of that name, or nullptr.
  const PlannedBuffer* find(const std::string& name) const;
};

// [begin, end) of the tensors whose fp32 master is split into halves under
// BufferPlanOptions::split_master: each layer's four matmul weights, the bulk of a GPT.
std::vector<std::pair<size_t, size_t>> split_master_tensors(const ParamLayout& layout);
// The rest of [0, layout.total()) between them: the tensors the --bf16 compute reads in fp32.
std::vector<std::pair<size_t, size_t>> fp32_read_tensors(const ParamLayout& layout);

// num_params: the flat parameter count (ParamLayout(config, options.stage).total()).
BufferPlan plan_buffers(const ModelConfig& config, size_t num_params,
                        const BufferPlanOptions& options);

// Per buffer of the plan: its byte offset inside the buffer it lives in (0 for own allocations).
std::vector<size_t> carve_offsets(const BufferPlan& plan);

const char* buffer_kind_name(BufferKind k);

// The one-line error for a plan that did not fit: what the weights, gradients, optimizer state,
// activations and workspace need against the card's free memory (before the backend allocated
// anything), and the advice that applies: when weights, gradients and optimizer state alone do
// not fit, no micro-batch setting helps; else what shrinks the activations and workspace.
// failed: the buffer whose allocation failed (may be empty).
std::string out_of_memory_message(const BufferPlan& plan, size_t free_bytes,
                                  const std::string& failed, const BufferPlanOptions& options);

}  // namespace gpt
