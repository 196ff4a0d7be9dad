#include "train/plan/model_shape.h"

#include <algorithm>
#include <regex>

#include "common/cli/error.h"
#include "train/launch/config.h"
#include "train/model/config.h"

namespace plan {

int ModelShape::padded_vocab(int tp) const { return gpt::pad_vocab(vocab, tp, divisible_by); }

double ModelShape::layer_params() const {
  const double h = hidden, f = ffn;
  return 4 * h * h + 2 * h * f + f + 9 * h;
}

double ModelShape::embedding_params(int tp) const {
  return (double(padded_vocab(tp)) + max_positions) * hidden;
}

double ModelShape::layer_forward_flops() const {
  const double h = hidden, f = ffn;
  // QKV 6h², projection 2h², MLP 4hf; attention scores and weighted values 4·s·h.
  return 8 * h * h + 4 * h * f + 4.0 * seq * h;
}

double ModelShape::head_forward_flops(int tp) const { return 2.0 * hidden * padded_vocab(tp); }

double ModelShape::activation_bytes(int micro_batch) const {
  return double(micro_batch) * seq * hidden * (bf16 ? 2 : 4);
}

ModelShape load_model_shape(const std::string& model, const std::string& presets_dir, const ShapeFlags& f) {
  ModelShape m;
  std::smatch g;
  const int seq_length = f.seq_length;
  static const std::regex shape(R"((\d{1,6})[xX](\d{1,6})[xX](\d{1,6}))");
  if (model.empty()) {
    if (!f.num_layers || !f.hidden_size || !f.num_attention_heads)
      throw suite::UsageError("give --model, or --num-layers, --hidden-size and --num-attention-heads");
    m.name = std::to_string(f.num_layers) + "x" + std::to_string(f.hidden_size) + "x" + std::to_string(f.num_attention_heads);
    m.seq = seq_length > 0 ? seq_length : 1024;
    m.max_positions = m.seq;
  } else if (std::regex_match(model, g, shape)) {
    m.name = model;
    m.layers = std::stoi(g[1]);
    m.hidden = std::stoi(g[2]);
    m.heads = std::stoi(g[3]);
    m.ffn = 4 * m.hidden;
    m.seq = seq_length > 0 ? seq_length : 1024;
    m.max_positions = m.seq;
    if (m.layers < 1 || m.hidden < 1 || m.heads < 1)
      throw suite::UsageError("--model " + model + ": layers, hidden size and heads must be positive");
  } else {
    const launch::Preset p = launch::load_preset(model, presets_dir);
    m.name = m.preset = p.name;
    m.layers = static_cast<int>(p.get_int("num-layers", 0));
    m.hidden = static_cast<int>(p.get_int("hidden-size", 0));
    m.heads = static_cast<int>(p.get_int("num-attention-heads", 0));
    m.ffn = static_cast<int>(p.get_int("ffn-hidden-size", 4L * m.hidden));
    m.seq = seq_length > 0 ? seq_length : static_cast<int>(p.get_int("seq-length", 1024));
    m.max_positions = std::max(m.seq, static_cast<int>(p.get_int("max-position-embeddings", m.seq)));
    m.vocab = static_cast<int>(p.get_int("vocab-size", 50257));
    m.divisible_by = static_cast<int>(p.get_int("make-vocab-size-divisible-by", 128));
    m.bf16 = p.get("bf16") == "true" || p.get("fp16") == "true";
    m.hidden_dropout = p.get_real("hidden-dropout", 0.1);
    if (m.layers < 1 || m.hidden < 1 || m.heads < 1)
      throw suite::UsageError("preset " + p.name + ": num-layers, hidden-size and num-attention-heads must be positive");
  }
  if (f.num_layers) m.layers = f.num_layers;
  if (f.hidden_size) m.hidden = f.hidden_size;
  if (f.num_attention_heads) m.heads = f.num_attention_heads;
  if (f.ffn_hidden_size) m.ffn = f.ffn_hidden_size;
  else if (f.hidden_size && m.preset.empty()) m.ffn = 4 * m.hidden;
  if (f.vocab_size) m.vocab = f.vocab_size;
  if (!model.empty() && (f.num_layers || f.hidden_size || f.num_attention_heads))
    m.name += " (" + std::to_string(m.layers) + "x" + std::to_string(m.hidden) + "x" + std::to_string(m.heads) + ")";
  if (m.ffn < 1) m.ffn = 4 * m.hidden;
  if (m.hidden % m.heads != 0)
    throw suite::UsageError("--model " + model + ": hidden size " + std::to_string(m.hidden) +
                            " is not a multiple of the " + std::to_string(m.heads) + " heads");
  return m;
}

}  // namespace plan
