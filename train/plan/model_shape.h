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

// gpt-train's shape flags given on the command line (0: not given).
struct ShapeFlags {
  int seq_length = 0, num_layers = 0, hidden_size = 0, num_attention_heads = 0, ffn_hidden_size = 0, vocab_size = 0;
};

// `model`: a preset name (presets_dir/NAME.yaml) or path, or "LxHxA" (layers x hidden x heads;
// ffn 4 x hidden, GPT-2's vocabulary, sequence 1024), or empty when the flags give layers, hidden
// size and heads. The flags override what the model names. Throws suite::UsageError naming the
// preset, the malformed shape or the missing flag.
ModelShape load_model_shape(const std::string& model, const std::string& presets_dir, const ShapeFlags& flags);

}  // namespace plan
