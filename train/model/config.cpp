#include "train/model/config.h"

#include "common/cli/error.h"

namespace gpt {

std::vector<std::pair<std::string, std::string>> ModelConfig::shape_fields() const {
  return {{"num-layers", std::to_string(num_layers)},
          {"hidden-size", std::to_string(hidden_size)},
          {"num-attention-heads", std::to_string(num_heads)},
          {"ffn-hidden-size", std::to_string(ffn_hidden_size)},
          {"seq-length", std::to_string(seq_length)},
          {"max-position-embeddings", std::to_string(max_position_embeddings)}};
}

int64_t ModelConfig::num_parameters() const {
  const int64_t C = hidden_size, F = ffn_hidden_size, L = num_layers;
  const int64_t per_layer = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (F * C + F) +
                            (C * F + C);
  return int64_t(padded_vocab_size) * C + int64_t(max_position_embeddings) * C + L * per_layer +
         2 * C;
}

double ModelConfig::flops_per_token() const {
  return 6.0 * double(num_parameters()) +
         12.0 * num_layers * double(hidden_size) * double(seq_length);
}

int pad_vocab(int vocab_size, int tensor_parallel, int divisible_by) {
  const int multiple = divisible_by * tensor_parallel;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

void ModelConfig::validate() const {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw suite::UsageError(msg);
  };
  need(num_layers > 0, "--num-layers must be positive");
  need(hidden_size > 0, "--hidden-size must be positive");
  need(num_heads > 0, "--num-attention-heads must be positive");
  need(hidden_size % num_heads == 0,
       "--hidden-size (" + std::to_string(hidden_size) + ") must be divisible by "
       "--num-attention-heads (" + std::to_string(num_heads) + ")");
  need(ffn_hidden_size > 0, "--ffn-hidden-size must be positive");
  need(seq_length > 0, "--seq-length must be positive");
  need(max_position_embeddings > 0, "--max-position-embeddings must be positive");
  need(seq_length <= max_position_embeddings,
       "--seq-length (" + std::to_string(seq_length) + ") is larger than "
       "--max-position-embeddings (" + std::to_string(max_position_embeddings) + ")");
  need(vocab_size > 0, "the vocabulary size must be positive");
  need(padded_vocab_size >= vocab_size, "padded vocabulary smaller than the vocabulary");
  need(init_method_std > 0, "--init-method-std must be positive");
}

}  // namespace gpt
