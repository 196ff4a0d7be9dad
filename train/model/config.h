// Shape of a GPT-2 / Megatron GPT model and the derived quantities every part agrees on.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpt {

struct ModelConfig {
  int num_layers = 0;
  int hidden_size = 0;
  int num_heads = 0;
  int ffn_hidden_size = 0;       // Megatron default 4·hidden_size
  int seq_length = 0;            // tokens per sample fed to the model
  int max_position_embeddings = 0;
  int vocab_size = 0;            // real (tokenizer) vocabulary
  int padded_vocab_size = 0;     // multiple of 128·TP, see pad_vocab()
  float init_method_std = 0.02f;

  // Every parameter, padded vocabulary rows and position table included.
  int64_t num_parameters() const;
  // Training FLOPs per token, PaLM / nanoGPT form: 6·N + 12·L·d·T (N = all parameters).
  double flops_per_token() const;
  // Throws suite::UsageError naming the flag when the shape is inconsistent.
  void validate() const;
  // The shape's flags and values, vocabulary aside ("num-layers" = "24", ...): what a checkpoint
  // records and what every rank of a job must agree on.
  std::vector<std::pair<std::string, std::string>> shape_fields() const;
};

// Megatron _vocab_size_with_padding: round up to a multiple of 128 · tensor-parallel size.
int pad_vocab(int vocab_size, int tensor_parallel = 1, int divisible_by = 128);

}  // namespace gpt
