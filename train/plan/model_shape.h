// The model a layout is planned for: a GPT's shape (from a preset or "LAYERSxHIDDENxHEADS"), its
// parameter counts per part and its FLOPs per token, the quantities every cost term scales with.
#pragma once

#include <string>

namespace plan {

struct ModelShape {
  std::string name;  // the preset's name, or the shape as given
  std::string preset;  // the preset's name when it came from one (for the gpt-launch command)
  int layers = 0, hidden = 0, heads = 0, ffn = 0, seq = 0, max_positions = 0;
  int vocab = 50257, divisible_by = 128;
  bool bf16 = true;
  double hidden_dropout = 0.1;

  int padded_vocab(int tp) const;
  // Parameters of one transformer layer (QKV, projection, two MLP products, two LayerNorms).
  double layer_params() const;
  // The word and position embeddings (vocabulary padded for tensor parallel size tp).
  double embedding_params(int tp) const;
  // The final LayerNorm (the output layer shares the word embedding).
  double head_params() const { return 2.0 * hidden; }
  double total_params() const { return layers * layer_params() + embedding_params(1) + head_params(); }
  // Forward FLOPs per token: one layer's matrix products and attention, the output layer's product.
  double layer_forward_flops() const;
  double head_forward_flops(int tp) const;
  // Bytes of one micro-batch's hidden state (what the pipeline stages send and TP all-reduces).
  double activation_bytes(int micro_batch) const;
};

// `model`: a preset name (presets_dir/NAME.yaml) or path, or "LxHxA" (layers x hidden x heads;
// ffn 4 x hidden, GPT-2's vocabulary, sequence `seq_length`). seq_length > 0 overrides the
// preset's. Throws suite::UsageError naming the preset or the malformed shape.
ModelShape load_model_shape(const std::string& model, const std::string& presets_dir, int seq_length);

}  // namespace plan
