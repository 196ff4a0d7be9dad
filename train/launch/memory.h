// Device memory per GPU of a preset's layout, read from the CUDA backend's buffer plan
// (train/backend/cuda/buffer_plan.h), so that the estimate is what gpt-train allocates. With tensor
// parallelism T and pipeline parallelism P each GPU is taken to hold 1/T of a stage of L/P layers
// (the embeddings counted on every stage); the distributed optimizer shards the optimizer state
// over the D data-parallel ranks and, with bf16, the fp32 master weights: a rank then keeps fp32
// only for its 1/D and for the tensors the bf16 compute reads in fp32 (embeddings, LayerNorms,
// biases: in whole 2 MiB pages of device memory).
#pragma once

#include <cstddef>

#include "train/launch/config.h"

namespace launch {

struct MemoryEstimate {
  double weights = 0, gradients = 0, optimizer = 0, optimizer_distributed = 0;
  double weights_distributed = 0;  // the weights with the distributed optimizer
  double activations = 0, activations_recompute = 0, workspace = 0;  // bytes
  size_t stage_parameters = 0;
};

MemoryEstimate estimate_memory(const Preset& p, int tp, int pp, int dp);

}  // namespace launch
