// Device memory per GPU of a pipeline stage, from the CUDA backend's buffer plan
// (train/backend/cuda/buffer_plan.h) as `gpt-launch estimate` reads it (train/launch/memory.cpp):
// the plan of a one-layer and a two-layer model give what one more layer adds (its weights,
// gradients, AdamW moments and saved activations) and what every stage holds besides its layers
// (embeddings, output buffers, workspace; counted on every stage, as gpt-launch counts them). The
// whole is divided by the tensor-parallel size; the distributed optimizer divides the moments by
// the data-parallel size; a stage of the 1F1B schedule keeps the activations of up to P - s
// micro-batches.
#pragma once

#include "train/plan/model_shape.h"

namespace plan {

struct MemoryParts {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, workspace = 0;  // bytes
  double total() const { return weights + gradients + optimizer + activations + workspace; }
};

class StageMemory {
 public:
  StageMemory(const ModelShape& m, int micro_batch, int tp, bool recompute);
  // layer_activation_bytes >= 0: a measured figure per layer and micro-batch (per GPU) instead of
  // the plan's.
  MemoryParts stage(int layers, int in_flight, int optimizer_shards, double layer_activation_bytes = -1) const;
  const MemoryParts& per_layer() const { return layer_; }
  const MemoryParts& fixed() const { return fixed_; }

 private:
  MemoryParts layer_, fixed_;
  int tp_;
};

}  // namespace plan
