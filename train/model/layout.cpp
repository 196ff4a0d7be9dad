#include "train/model/layout.h"

#include <cstring>
#include <stdexcept>

#include "common/cli/error.h"

namespace gpt {
namespace {

// Tensors per transformer layer, and the global index of layer l's first one (after wte, wpe).
constexpr int kLayerTensors = 12;
int layer_index(int l) { return 2 + kLayerTensors * l; }

}  // namespace

size_t ParamLayout::add(std::string name, std::vector<int> global_shape, ParamKind kind,
                        TensorSplit split, int global_index, bool output_layer) {
  const int tp = stage_.tp_size;
  TensorInfo t;
  t.name = std::move(name);
  t.global_shape = global_shape;
  t.global_numel = 1;
  for (int d : global_shape) t.global_numel *= size_t(d);
  t.shape = std::move(global_shape);
  if (split == TensorSplit::kRows || split == TensorSplit::kQkvRows) t.shape[0] /= tp;
  if (split == TensorSplit::kColumns) t.shape[1] /= tp;
  t.numel = 1;
  for (int d : t.shape) t.numel *= size_t(d);
  t.offset = total_;
  t.kind = kind;
  t.output_layer = output_layer;
  t.global_index = global_index;
  t.split = split;
  total_ += t.numel;
  tensors_.push_back(std::move(t));
  return tensors_.back().offset;
}

ParamLayout::ParamLayout(const ModelConfig& c) : ParamLayout(c, StageSpec{}) {}

ParamLayout::ParamLayout(const ModelConfig& c, const StageSpec& stage) : stage_(stage) {
  const int C = c.hidden_size, F = c.ffn_hidden_size, tp = stage.tp_size;
  const int n = stage.layers(c);
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw suite::UsageError(msg);
  };
  need(tp >= 1 && stage.tp_rank >= 0 && stage.tp_rank < tp,
       "tensor-parallel rank " + std::to_string(stage.tp_rank) + " outside a group of " +
           std::to_string(tp));
  need(stage.first_layer >= 0 && n >= 0 && stage.first_layer + n <= c.num_layers,
       "pipeline stage layers [" + std::to_string(stage.first_layer) + ", " +
           std::to_string(stage.first_layer + n) + ") outside the model's " +
           std::to_string(c.num_layers) + " layers");
  need(c.num_heads % tp == 0, "--tensor-model-parallel-size " + std::to_string(tp) +
                                  " does not divide --num-attention-heads " +
                                  std::to_string(c.num_heads));
  need(F % tp == 0, "--tensor-model-parallel-size " + std::to_string(tp) +
                        " does not divide --ffn-hidden-size " + std::to_string(F));
  need(c.padded_vocab_size % tp == 0,
       "the padded vocabulary (" + std::to_string(c.padded_vocab_size) +
           ") is not a multiple of --tensor-model-parallel-size " + std::to_string(tp));
  local_vocab_ = c.padded_vocab_size / tp;
  vocab_begin_ = stage.tp_rank * local_vocab_;
  has_wte_ = stage.has_embedding || stage.has_head;
  const auto R = TensorSplit::kReplicated;
  if (has_wte_) {
    wte_ = add("embedding.word_embeddings.weight", {c.padded_vocab_size, C},
               ParamKind::kEmbedding, TensorSplit::kRows, 0);
    wte_numel_ = tensors_.back().numel;
  }
  if (stage.has_embedding)
    wpe_ = add("embedding.position_embeddings.weight", {c.max_position_embeddings, C},
               ParamKind::kEmbedding, R, 1);
  for (int i = stage.first_layer; i < stage.first_layer + n; ++i) {
    const std::string p = "decoder.layers." + std::to_string(i) + ".";
    int g = layer_index(i);
    LayerOffsets o;
    o.ln1_w = add(p + "input_layernorm.weight", {C}, ParamKind::kNorm, R, g++);
    o.ln1_b = add(p + "input_layernorm.bias", {C}, ParamKind::kNorm, R, g++);
    o.qkv_w = add(p + "self_attention.linear_qkv.weight", {3 * C, C}, ParamKind::kWeight,
                  TensorSplit::kQkvRows, g++);
    o.qkv_b = add(p + "self_attention.linear_qkv.bias", {3 * C}, ParamKind::kBias,
                  TensorSplit::kQkvRows, g++);
    o.proj_w = add(p + "self_attention.linear_proj.weight", {C, C}, ParamKind::kWeight,
                   TensorSplit::kColumns, g++, true);
    o.proj_b = add(p + "self_attention.linear_proj.bias", {C}, ParamKind::kBias, R, g++);
    o.ln2_w = add(p + "pre_mlp_layernorm.weight", {C}, ParamKind::kNorm, R, g++);
    o.ln2_b = add(p + "pre_mlp_layernorm.bias", {C}, ParamKind::kNorm, R, g++);
    o.fc_w = add(p + "mlp.linear_fc1.weight", {F, C}, ParamKind::kWeight, TensorSplit::kRows, g++);
    o.fc_b = add(p + "mlp.linear_fc1.bias", {F}, ParamKind::kBias, TensorSplit::kRows, g++);
    o.fc2_w = add(p + "mlp.linear_fc2.weight", {C, F}, ParamKind::kWeight, TensorSplit::kColumns,
                  g++, true);
    o.fc2_b = add(p + "mlp.linear_fc2.bias", {C}, ParamKind::kBias, R, g++);
    layers_.push_back(o);
  }
  if (stage.has_head) {
    lnf_w_ = add("decoder.final_layernorm.weight", {C}, ParamKind::kNorm, R,
                 layer_index(c.num_layers));
    lnf_b_ = add("decoder.final_layernorm.bias", {C}, ParamKind::kNorm, R,
                 layer_index(c.num_layers) + 1);
  }
}

const TensorInfo& ParamLayout::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  throw std::out_of_range("no parameter named " + name);
}

namespace {

// Calls copy(global_offset, local_offset, count) for every contiguous run of this rank's elements.
template <typename Copy>
void each_run(const TensorInfo& t, int tp, int rank, Copy copy) {
  switch (t.split) {
    case TensorSplit::kReplicated:
      copy(size_t(0), size_t(0), t.numel);
      return;
    case TensorSplit::kRows:  // rows [rank·r, (rank+1)·r), r = local rows
      copy(size_t(rank) * t.numel, size_t(0), t.numel);
      return;
    case TensorSplit::kQkvRows: {  // the same inside each of the three thirds
      const size_t third = t.numel / 3;  // local elements per third
      for (size_t k = 0; k < 3; ++k)
        copy(k * third * tp + size_t(rank) * third, k * third, third);
      return;
    }
    case TensorSplit::kColumns: {  // columns [rank·c, (rank+1)·c) of every row
      const size_t rows = size_t(t.shape[0]), cols = size_t(t.shape[1]);
      for (size_t r = 0; r < rows; ++r) copy(r * cols * tp + size_t(rank) * cols, r * cols, cols);
      return;
    }
  }
}

}  // namespace

void ParamLayout::shard_of(const TensorInfo& t, const float* global, float* local) const {
  each_run(t, stage_.tp_size, stage_.tp_rank, [&](size_t g, size_t l, size_t n) {
    std::memcpy(local + l, global + g, n * sizeof(float));
  });
}

void ParamLayout::unshard(const TensorInfo& t, const float* local, float* global) const {
  each_run(t, stage_.tp_size, stage_.tp_rank, [&](size_t g, size_t l, size_t n) {
    std::memcpy(global + g, local + l, n * sizeof(float));
  });
}

void ParamLayout::shard_of_full(const ParamLayout& full_layout, const float* full,
                                float* local) const {
  for (const TensorInfo& t : tensors_)
    shard_of(t, full + full_layout.tensors()[t.global_index].offset, local + t.offset);
}

void ParamLayout::unshard_into_full(const ParamLayout& full_layout, const float* local,
                                    float* full) const {
  for (const TensorInfo& t : tensors_)
    unshard(t, local + t.offset, full + full_layout.tensors()[t.global_index].offset);
}

}  // namespace gpt
