// The layout search of gpt-plan: every tensor-parallel size T (dividing the heads, inside a node),
// pipeline size P, data-parallel size D = GPUs / (T x P), micro-batch size, recomputation on or
// off, distributed optimizer on or off, order of the node groups along the pipeline (which GPU
// type runs which stages) and the balanced stage partition of each; layouts that do not fit in
// memory are rejected, the others ranked by the predicted step time:
//
//   step = pipeline (1F1B: sum of the stages' compute and transfers + (m - 1) x slowest stage)
//        + data-parallel gradient reduction (ring: 2 (D-1)/D x bytes / bandwidth; reduce-scatter
//          and all-gather with the distributed optimizer), the slowest stage's
//        + the tied embedding's all-reduce between the first and last stage
//        + the optimizer step (memory bound), the slowest stage's.
// A stage's compute per micro-batch: its layers' forward and backward (plus a second forward with
// recomputation), the embedding on the first stage, the output layer on the last, and the layers'
// tensor-parallel all-reduces (two forward, two backward per layer; two more when recomputing).
//
// Ranks are numbered as Megatron numbers them (tensor fastest, then data, then pipeline), the node
// groups one after the other in the chosen order, so stage s runs on ranks [s T D, (s+1) T D).
#pragma once

#include <string>
#include <vector>

#include "train/plan/cluster_spec.h"
#include "train/plan/gpu_profile.h"
#include "train/plan/model_shape.h"
#include "train/plan/stage_memory.h"

namespace plan {

struct PlanInputs {
  ModelShape model;
  ClusterSpec cluster;
  std::vector<GpuProfile> profiles;  // one per cluster group, in the cluster file's order
  std::vector<double> memory_gib;    // usable memory per group (after the headroom)
  int global_batch = 1;
  bool grad_reduce_bf16 = false;     // gradients reduced in bf16 instead of fp32
  int max_micro_batch = 64;
};

struct Layout {
  int tp = 1, pp = 1, dp = 1, micro_batch = 1, micro_batches = 1;
  bool recompute = false, distributed_optimizer = false;
  std::vector<int> order;  // group indices along the pipeline (rank order)
  std::vector<int> nodes;  // nodes used of each group (by group index)
  std::vector<int> partition;  // layers per stage
};

struct StagePrediction {
  std::vector<int> groups;  // the node groups its ranks are on
  std::string gpu;          // their GPU type(s), "A10" or "A10+RTX3090"
  int layers = 0, in_flight = 1;
  double layer_ms = 0, tp_ms_per_layer = 0, extra_ms = 0, p2p_ms = 0;  // per micro-batch
  double compute_ms = 0;      // layers x layer_ms + extra_ms
  double dp_ms = 0, optimizer_ms = 0;
  double params = 0;          // parameters of the stage (all tensor-parallel shards)
  double measured_activation = -1;  // per layer and micro-batch from the profile; < 0: the plan's
  MemoryParts memory;         // per GPU
  double memory_limit = 0;    // bytes, the smallest of its groups'
  std::string note;           // where the times come from
};

struct Prediction {
  Layout layout;
  std::vector<StagePrediction> stages;
  double pipeline_ms = 0, bubble = 0, dp_ms = 0, embedding_ms = 0, optimizer_ms = 0, step_ms = 0;
  double tokens_per_s = 0, dollars_per_step = -1;
  int gpus = 0;
  bool fits = true;
  std::string rejected;  // why not, when !fits
};

// Predicts one layout; with an empty partition, the balanced one is chosen (fits = false and
// `rejected` say why none works). A partition that does not sum to the layers or breaks the
// stage rules is rejected the same way.
Prediction predict(const PlanInputs& in, Layout layout);

struct SearchOptions {
  bool even_only = false;   // Megatron's even split instead of the balanced partition
  bool subsets = false;     // also every smaller choice of nodes per group (--pareto)
  std::vector<int> tp, pp, micro_batch;  // restrict (empty: all)
  std::vector<int> partition;            // a fixed partition (its size fixes P); empty: searched
  int recompute = -1, distributed_optimizer = -1;  // 0 off, 1 on, -1 both
};

struct SearchResult {
  std::vector<Prediction> ranked;  // fitting layouts, fastest first
  int evaluated = 0, rejected_memory = 0, rejected_profile = 0;
  std::string example_rejection;  // one reason, for the "fits nowhere" message
};

SearchResult search(const PlanInputs& in, const SearchOptions& opt);

// Time against cost: the fitting layouts no other is both faster and cheaper per step than,
// fastest first. Needs prices on every group.
std::vector<Prediction> pareto_front(const std::vector<Prediction>& ranked);

}  // namespace plan
