// Megatron initialisation of the flat parameter buffer.
#pragma once

#include <cstdint>
#include <vector>

#include "train/model/config.h"
#include "train/model/layout.h"

namespace gpt {

// Weights and embeddings ~ N(0, std); attention proj and fc2 ~ N(0, std / sqrt(2·num_layers));
// biases 0; LayerNorm weight 1, bias 0. Padded vocabulary rows are initialised like the rest
// (as Megatron does) but never receive gradient from the loss.
// Each tensor draws from its own stream keyed by (seed, tensor index in the one-GPU layout), so the
// values do not depend on the buffer order. A stage / tensor-parallel layout draws each whole
// tensor and keeps its shard: every layout starts from the one-GPU model's weights (the padded
// vocabulary rows aside, whose count depends on the tensor-parallel size).
void init_parameters(float* params, const ModelConfig& config, const ParamLayout& layout,
                     uint64_t seed);

}  // namespace gpt
