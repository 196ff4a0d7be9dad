// The balanced stage partition: how many transformer layers each pipeline stage holds, given
// each stage's time per layer (its GPU type's, per micro-batch), the extra work of the first stage
// (embedding) and the last (output layer), the point-to-point time after each stage and a cap on
// each stage's layers (its memory). The objective is the 1F1B step's pipeline time:
//   sum over stages of their compute + the transfers + (m - 1) x the slowest stage's cycle,
// which for equal stages is Megatron's (m + P - 1) x stage time. The end stages may hold no layer
// (only the embedding, or only the output layer); middle stages hold at least one.
#pragma once

#include <string>
#include <vector>

namespace plan {

struct StageSpeed {
  double layer_ms = 0;  // forward + backward of one layer for one micro-batch
  double extra_ms = 0;  // embedding (first stage), output layer (last stage)
  double p2p_ms = 0;    // activations to the next stage and gradients back, per micro-batch
  int max_layers = 0;   // what fits in memory; < 0: not even an empty stage fits
};

// The pipeline time of a partition (the objective above).
double pipeline_ms(const std::vector<StageSpeed>& stages, const std::vector<int>& layers, int micro_batches);

// The partition of `total_layers` minimising pipeline_ms: a dynamic programme over stages for the
// smallest slowest stage, then single-layer moves between stages while they lower the objective.
// Empty when no partition fits the caps.
std::vector<int> balanced_partition(const std::vector<StageSpeed>& stages, int total_layers, int micro_batches);

// Megatron's even split: total / P layers per stage; empty when P does not divide the layers
// (Megatron refuses such a split).
std::vector<int> even_partition(int stages, int total_layers);

// "0-11-8-8" (layers per stage, as gpt-train's --pipeline-partition): throws suite::UsageError.
std::vector<int> parse_partition(const std::string& text);

}  // namespace plan
