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
// Each tensor draws from its own stream keyed by (seed, tensor index), so the values do not depend
// on the buffer order or on how tensors are later sharded.
void init_parameters(float* params, const ModelConfig& config, const ParamLayout& layout,
                     uint64_t seed);

}  // namespace gpt
