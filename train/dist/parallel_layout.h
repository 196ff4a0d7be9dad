// Where every rank stands in a tensor × data × pipeline job and which transformer layers each
// pipeline stage holds. Ranks are ordered as Megatron orders them (tensor fastest, then data, then
// pipeline): rank = tp + T·(dp + D·pp). The stages' layers come from one of several spellings
// (even split, Megatron's first/last-stage counts or layout string, --pipeline-partition, FASOP's
// --balance), all resolved here into one list, so the rest of the trainer sees a single shape.
#pragma once

#include <string>
#include <vector>

namespace gpt::dist {

// The command line's layout flags, as given (validated by resolve_layout).
struct LayoutFlags {
  int tensor = 1;    // --tensor-model-parallel-size
  int pipeline = 1;  // --pipeline-model-parallel-size
  int first_stage_layers = -1;  // --decoder-first-pipeline-num-layers (-1: not given)
  int last_stage_layers = -1;   // --decoder-last-pipeline-num-layers
  std::string partition;        // --pipeline-partition 0-11-8-8-8-8-5-0
  std::string balance;          // --balance (FASOP): layers per stage, or L+2 units
  std::string layout;           // --pipeline-model-parallel-layout "E|t*11|...|L"
  int layers_per_virtual_stage = 0;  // --num-layers-per-virtual-pipeline-stage (0: none)
  bool sequence_parallel = false;    // --sequence-parallel (forced off at T=1)
};

struct RankCoord {
  int tp = 0, dp = 0, pp = 0;
  bool operator==(const RankCoord&) const = default;
};

struct ParallelLayout {
  int tensor = 1, pipeline = 1, data = 1;
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved schedule when > 1)
  bool sequence_parallel = false;
  // Layers of each model chunk in model order: chunk s runs on pipeline rank s % P as that rank's
  // chunk s / P (Megatron's round robin), and holds the next stage_layers[s] layers.
  std::vector<int> stage_layers;

  int world_size() const { return tensor * pipeline * data; }
  RankCoord coord(int rank) const;
  int rank_of(const RankCoord& c) const;
  // Global ranks of `rank`'s groups, in group-rank order. TP: same (dp, pp); DP: same (tp, pp);
  // PP: same (tp, dp), ordered by pp; embedding: the first and the last stage of its PP group
  // (for a middle stage, or when P = 1, the rank alone).
  std::vector<int> tensor_group(int rank) const;
  std::vector<int> data_group(int rank) const;
  std::vector<int> pipeline_group(int rank) const;
  std::vector<int> embedding_group(int rank) const;
  // The model chunk `chunk` of pipeline rank pp: its first global layer and its layer count.
  int first_layer(int pp, int chunk = 0) const;
  int num_layers(int pp, int chunk = 0) const;
  // Per pipeline rank, its layers (chunks summed): "0-11-8-8-8-8-5-0".
  std::string partition_text() const;
  // The lines printed once at start (Megatron's wording for the sizes, then the stages).
  std::vector<std::string> describe() const;
  // "(tp 1, dp 0, pp 2)"
  std::string coord_text(int rank) const;
};

// Checks the flags against the model and the world size and resolves the stages' layers.
// world_size 0: only what does not depend on it (the command line alone; data = 1). Throws
// suite::UsageError naming the flags, e.g. "--tensor-model-parallel-size 3 does not divide
// --num-attention-heads 4", "--pipeline-partition sums to 47, --num-layers is 48".
ParallelLayout resolve_layout(const LayoutFlags& flags, int num_layers, int num_heads,
                              int ffn_hidden_size, int seq_length, int world_size);

// "0-11-8-8-8-8-5-0", "[1, 11, 8]" or "1,11,8" as numbers; throws suite::UsageError naming `flag`.
std::vector<int> parse_layer_counts(const std::string& text, const std::string& flag);
// Megatron's layout string ("E|t*11|(t|)*3,t|L"; E embedding, t transformer layer, L output
// layer and loss, x*n and (...)*n repeat, '|' ends a stage, ',' ignored) as the layers of each
// stage; E must open the first stage and L close the last. Throws suite::UsageError.
std::vector<int> parse_megatron_layout(const std::string& text);

}  // namespace gpt::dist
