// The flat parameter buffer: every tensor's name, shape and offset.
//
// Order (per layer, so a pipeline stage later owns one contiguous range):
//   embedding.word_embeddings.weight [Vp, C], embedding.position_embeddings.weight [maxT, C],
//   decoder.layers.{i}.{input_layernorm.weight/bias [C], self_attention.linear_qkv.weight [3C, C]
//   + bias [3C], self_attention.linear_proj.weight [C, C] + bias [C], pre_mlp_layernorm.weight/bias
//   [C], mlp.linear_fc1.weight [F, C] + bias [F], mlp.linear_fc2.weight [C, F] + bias [C]},
//   decoder.final_layernorm.weight/bias [C].
// Names follow Megatron-core; the QKV rows are [q | k | v] (HF GPT-2 order, see ops.h), not
// Megatron's per-head interleaving. Gradients and Adam moments use the same layout.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "train/model/config.h"

namespace gpt {

enum class ParamKind { kEmbedding, kWeight, kBias, kNorm };

struct TensorInfo {
  std::string name;
  std::vector<int> shape;
  size_t offset = 0;
  size_t numel = 0;
  ParamKind kind = ParamKind::kWeight;
  bool output_layer = false;  // attention proj / fc2: init std scaled by 1/sqrt(2·L)
  bool decays() const { return kind == ParamKind::kWeight || kind == ParamKind::kEmbedding; }
};

// Offsets of one transformer layer's tensors inside the flat buffer.
struct LayerOffsets {
  size_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fc2_w, fc2_b;
};

class ParamLayout {
 public:
  explicit ParamLayout(const ModelConfig& config);

  size_t total() const { return total_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo& find(const std::string& name) const;  // throws std::out_of_range
  size_t wte() const { return wte_; }
  size_t wpe() const { return wpe_; }
  size_t lnf_w() const { return lnf_w_; }
  size_t lnf_b() const { return lnf_b_; }
  const LayerOffsets& layer(int i) const { return layers_[i]; }

 private:
  size_t add(std::string name, std::vector<int> shape, ParamKind kind, bool output_layer = false);
  std::vector<TensorInfo> tensors_;
  std::vector<LayerOffsets> layers_;
  size_t total_ = 0, wte_ = 0, wpe_ = 0, lnf_w_ = 0, lnf_b_ = 0;
};

}  // namespace gpt
