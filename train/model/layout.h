// The flat parameter buffer: every tensor's name, shape and offset — of the whole model, or of one
// rank's share of it under tensor and pipeline parallelism (a StageSpec).
//
// Order (per layer, so a pipeline stage owns one contiguous range):
//   embedding.word_embeddings.weight [Vp, C], embedding.position_embeddings.weight [maxT, C],
//   decoder.layers.{i}.{input_layernorm.weight/bias [C], self_attention.linear_qkv.weight [3C, C]
//   + bias [3C], self_attention.linear_proj.weight [C, C] + bias [C], pre_mlp_layernorm.weight/bias
//   [C], mlp.linear_fc1.weight [F, C] + bias [F], mlp.linear_fc2.weight [C, F] + bias [C]},
//   decoder.final_layernorm.weight/bias [C].
// Names follow Megatron-core; the QKV rows are [q | k | v] (HF GPT-2 order, see ops.h), not
// Megatron's per-head interleaving. Gradients and Adam moments use the same layout.
//
// A stage's layout keeps that order with only its tensors: the word embedding when it is the first
// or the last stage (the last uses it as the tied output layer; both hold the whole tensor's TP
// shard under the same global name), the position embedding on the first stage, its layers (global
// indices in the names), the final LayerNorm on the last stage. Under tensor parallelism
// (Megatron's split) each tensor is this rank's shard:
//   rows split      fc1 weight + bias, word embedding (vocabulary rows; Vp a multiple of T)
//   qkv rows split  qkv weight + bias: rows [t·C/T, (t+1)·C/T) of each of the q, k, v thirds, so a
//                   rank holds heads [t·H/T, (t+1)·H/T); its local rows are [q_t | k_t | v_t]
//   columns split   attention proj weight, fc2 weight (row-parallel layers)
//   replicated      LayerNorms, proj and fc2 biases, position embedding
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "train/model/config.h"

namespace gpt {

enum class ParamKind { kEmbedding, kWeight, kBias, kNorm };

// How a global tensor is cut over the tensor-parallel ranks (see the file comment).
enum class TensorSplit { kReplicated, kRows, kQkvRows, kColumns };

struct TensorInfo {
  std::string name;          // this rank's name: the global name (layer indices are global)
  std::vector<int> shape;    // this rank's shard
  size_t offset = 0;
  size_t numel = 0;
  ParamKind kind = ParamKind::kWeight;
  bool output_layer = false;  // attention proj / fc2: init std scaled by 1/sqrt(2·L)
  // The whole tensor of the one-GPU model, and this tensor's index in ParamLayout(config).tensors()
  // (init draws tensor i from stream (seed, i), so every layout starts from the same weights).
  std::vector<int> global_shape;
  size_t global_numel = 0;
  int global_index = 0;
  TensorSplit split = TensorSplit::kReplicated;
  bool decays() const { return kind == ParamKind::kWeight || kind == ParamKind::kEmbedding; }
};

// Which part of the model a rank holds (BackendOptions::stage). The default is the whole model.
struct StageSpec {
  int first_layer = 0;        // global index of this stage's first transformer layer
  int num_layers = -1;        // -1: all (no pipeline); 0 allowed at the two ends
  bool has_embedding = true;  // first stage: word + position embeddings
  bool has_head = true;       // last stage: final LayerNorm, output layer (tied wte), loss
  int tp_size = 1, tp_rank = 0;
  // --sequence-parallel: outside the TP regions (LayerNorms, dropout, residuals) a rank holds rows
  // [tp_rank·B·T/tp, (tp_rank+1)·B·T/tp) of the [B·T, C] activations (T % tp_size == 0).
  bool sequence_parallel = false;

  // num_layers with -1 resolved.
  int layers(const ModelConfig& c) const {
    return num_layers < 0 ? c.num_layers - first_layer : num_layers;
  }
  bool whole_model(const ModelConfig& c) const {
    return first_layer == 0 && layers(c) == c.num_layers && has_embedding && has_head;
  }
};

// Offsets of one transformer layer's tensors inside the flat buffer.
struct LayerOffsets {
  size_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fc2_w, fc2_b;
};

class ParamLayout {
 public:
  // The whole model on one rank.
  explicit ParamLayout(const ModelConfig& config);
  // This rank's share. Throws suite::UsageError when the stage does not fit the model (layers out
  // of range, tp_size not dividing the heads, the FFN size or the padded vocabulary).
  ParamLayout(const ModelConfig& config, const StageSpec& stage);

  size_t total() const { return total_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // By global name; throws std::out_of_range.
  const TensorInfo& find(const std::string& name) const;
  const StageSpec& stage() const { return stage_; }

  // Word embedding (first and last stage), position embedding (first), final LayerNorm (last):
  // the offsets are valid only where has_*() is true.
  bool has_wte() const { return has_wte_; }
  bool has_wpe() const { return stage_.has_embedding; }
  bool has_final_norm() const { return stage_.has_head; }
  size_t wte() const { return wte_; }
  size_t wte_numel() const { return wte_numel_; }  // local rows × C (the embedding group's range)
  size_t wpe() const { return wpe_; }
  size_t lnf_w() const { return lnf_w_; }
  size_t lnf_b() const { return lnf_b_; }
  // This stage's layers: layer(i) for i in [0, num_layers()) is global layer first_layer() + i.
  int num_layers() const { return int(layers_.size()); }
  int first_layer() const { return stage_.first_layer; }
  const LayerOffsets& layer(int i) const { return layers_[i]; }
  // This rank's word-embedding rows: [vocab_begin(), vocab_begin() + local_vocab()) of Vp.
  int vocab_begin() const { return vocab_begin_; }
  int local_vocab() const { return local_vocab_; }

  // True for a tensor every TP rank holds whole (its gradient norm counts once per TP group).
  static bool replicated_in_tp(const TensorInfo& t) { return t.split == TensorSplit::kReplicated; }
  // With --sequence-parallel and T > 1, the replicated tensors whose gradients each TP rank
  // computes from its sequence shard only (LayerNorms, row-parallel biases, position embedding):
  // the backend all-reduces them over the TP group in every backward.
  bool grad_needs_tp_reduce(const TensorInfo& t) const {
    return stage_.sequence_parallel && stage_.tp_size > 1 && replicated_in_tp(t);
  }
  // Whether this rank's copy of t enters the global gradient norm (a sum over every rank of the
  // world): not a replicated tensor on TP ranks other than 0, nor the tied word embedding on a last
  // stage without the embedding (after the embedding group's sum the first stage's copy counts).
  bool counts_in_norm(const TensorInfo& t) const {
    if (!stage_.has_embedding && t.offset == wte_ && has_wte_) return false;
    return stage_.tp_rank == 0 || !replicated_in_tp(t);
  }

  // Tensor sharding (the helpers of init, checkpoints and tests). `global` is the whole tensor in
  // its global_shape, row-major; `local` this rank's t.numel elements.
  void shard_of(const TensorInfo& t, const float* global, float* local) const;
  // unshard writes this rank's part of `global` only (gather every rank's for the whole tensor).
  void unshard(const TensorInfo& t, const float* local, float* global) const;
  // The same over whole flat buffers: `full` is laid out as ParamLayout(config) (the one-GPU flat
  // buffer with this config's padded vocabulary), `local` as this layout.
  void shard_of_full(const ParamLayout& full_layout, const float* full, float* local) const;
  void unshard_into_full(const ParamLayout& full_layout, const float* local, float* full) const;

 private:
  size_t add(std::string name, std::vector<int> global_shape, ParamKind kind, TensorSplit split,
             int global_index, bool output_layer = false);
  StageSpec stage_;
  std::vector<TensorInfo> tensors_;
  std::vector<LayerOffsets> layers_;
  bool has_wte_ = true;
  int vocab_begin_ = 0, local_vocab_ = 0;
  size_t total_ = 0, wte_ = 0, wte_numel_ = 0, wpe_ = 0, lnf_w_ = 0, lnf_b_ = 0;
};

}  // namespace gpt
