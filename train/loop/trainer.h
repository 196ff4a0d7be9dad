// The training run: setup (validate everything before compute), the iteration loop, evaluation,
// logging, checkpoints and export.
#pragma once

#include <iosfwd>
#include <vector>

#include "train/loop/args.h"
#include "train/loop/data_parallel.h"

namespace gpt {

struct TrainResult {
  std::vector<double> losses;  // lm loss of every iteration run by this process, in order
  std::vector<double> validation_losses;
  int64_t final_iteration = 0;
  bool exited_early = false;   // --exit-interval / --exit-duration-in-mins / signal
};

// Runs the whole job; log lines go to `log` (stdout in gpt-train). Throws suite::UsageError /
// suite::ToolError on bad input, before any compute where the input can be checked up front.
// With env (world_size > 1) this process is rank env->rank of a data-parallel job: args must have
// been through apply_data_parallel(args, env->world_size); the last rank prints the iteration
// and validation lines, every rank its start and memory lines.
TrainResult run_training(const TrainArgs& args, std::ostream& log, const DistEnv* env = nullptr);

}  // namespace gpt
