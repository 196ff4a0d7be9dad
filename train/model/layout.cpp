#include "train/model/layout.h"

#include <stdexcept>

namespace gpt {

size_t ParamLayout::add(std::string name, std::vector<int> shape, ParamKind kind,
                        bool output_layer) {
  TensorInfo t;
  t.name = std::move(name);
  t.numel = 1;
  for (int d : shape) t.numel *= size_t(d);
  t.shape = std::move(shape);
  t.offset = total_;
  t.kind = kind;
  t.output_layer = output_layer;
  total_ += t.numel;
  tensors_.push_back(std::move(t));
  return tensors_.back().offset;
}

ParamLayout::ParamLayout(const ModelConfig& c) {
  const int C = c.hidden_size, F = c.ffn_hidden_size;
  wte_ = add("embedding.word_embeddings.weight", {c.padded_vocab_size, C}, ParamKind::kEmbedding);
  wpe_ = add("embedding.position_embeddings.weight", {c.max_position_embeddings, C},
             ParamKind::kEmbedding);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = "decoder.layers." + std::to_string(i) + ".";
    LayerOffsets o;
    o.ln1_w = add(p + "input_layernorm.weight", {C}, ParamKind::kNorm);
    o.ln1_b = add(p + "input_layernorm.bias", {C}, ParamKind::kNorm);
    o.qkv_w = add(p + "self_attention.linear_qkv.weight", {3 * C, C}, ParamKind::kWeight);
    o.qkv_b = add(p + "self_attention.linear_qkv.bias", {3 * C}, ParamKind::kBias);
    o.proj_w = add(p + "self_attention.linear_proj.weight", {C, C}, ParamKind::kWeight, true);
    o.proj_b = add(p + "self_attention.linear_proj.bias", {C}, ParamKind::kBias);
    o.ln2_w = add(p + "pre_mlp_layernorm.weight", {C}, ParamKind::kNorm);
    o.ln2_b = add(p + "pre_mlp_layernorm.bias", {C}, ParamKind::kNorm);
    o.fc_w = add(p + "mlp.linear_fc1.weight", {F, C}, ParamKind::kWeight);
    o.fc_b = add(p + "mlp.linear_fc1.bias", {F}, ParamKind::kBias);
    o.fc2_w = add(p + "mlp.linear_fc2.weight", {C, F}, ParamKind::kWeight, true);
    o.fc2_b = add(p + "mlp.linear_fc2.bias", {C}, ParamKind::kBias);
    layers_.push_back(o);
  }
  lnf_w_ = add("decoder.final_layernorm.weight", {C}, ParamKind::kNorm);
  lnf_b_ = add("decoder.final_layernorm.bias", {C}, ParamKind::kNorm);
}

const TensorInfo& ParamLayout::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  throw std::out_of_range("no parameter named " + name);
}

}  // namespace gpt
