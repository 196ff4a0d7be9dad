// gpt-plan's work: reads the model, cluster and profiles, searches the layouts and prints the
// fastest ones (their step time, tokens/s, memory per GPU type, gpt-train flags and a gpt-launch
// command), the best even split beside them, the cost terms of one layout (--explain), the
// time/cost trade-off (--pareto) or all of it as JSON.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "train/plan/planner.h"

namespace plan {

struct PlanOptions {
  std::string model, presets_dir, cluster;
  std::vector<std::string> profiles;
  int global_batch = 0;
  ShapeFlags shape;  // gpt-train's shape flags (--seq-length, --num-layers, ...)
  bool analytic = false;        // published speeds for GPU types without a profile
  double efficiency = 0.5;      // of the peak TFLOP/s, for analytic profiles
  double headroom_gib = 1.0;    // kept free on every GPU (CUDA context, allocator)
  int top = 5, explain = 0, max_micro_batch = 64;
  bool pareto = false, json = false, even_only = false, grad_reduce_bf16 = false;
  std::vector<int> tp, pp, micro_batch, partition;
  int recompute = -1, distributed_optimizer = -1;  // 0 off, 1 on, -1 both
};

// Resolves a profile for every node group (files first; with `analytic`, the group's own
// peak-tflops / memory-bandwidth-gbs or the built-in table) and the usable memory of each.
// Throws suite::ToolError naming the group and GPU type when neither exists.
PlanInputs make_inputs(const PlanOptions& o);

// The gpt-train flags and gpt-launch command of a layout.
std::string train_flags(const PlanInputs& in, const Prediction& p);
std::string launch_command(const PlanInputs& in, const Prediction& p);

// Prints to `out`; throws suite::ToolError when no layout fits.
int run_plan(const PlanOptions& o, std::ostream& out);

}  // namespace plan
