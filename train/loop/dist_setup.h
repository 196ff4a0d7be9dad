// Joins a data-parallel job for gpt-train: rank discovery (train/dist/launch_env.h), the
// rendezvous that refuses ranks with another configuration, the GPU choice and the communicator
// (TCP sockets for --device cpu, NCCL for --device cuda).
#pragma once

#include <iosfwd>
#include <memory>

#include "train/loop/args.h"
#include "train/loop/data_parallel.h"

namespace gpt {

class DistJob {
 public:
  virtual ~DistJob() = default;
  // The trainer's view (null when this process runs alone).
  virtual const DistEnv* env() const = 0;
};

// Discovers this process's place; alone (world size 1) it only applies DP = 1 and prints the
// launcher's note if any. Otherwise: apply_data_parallel(args, world size) (usage errors first),
// the rendezvous and the communicator. Throws suite::UsageError / suite::ToolError.
std::unique_ptr<DistJob> join_data_parallel(TrainArgs& args, std::ostream& log);

// The options every rank must share (the rendezvous compares them), as option=value pairs.
std::vector<std::pair<std::string, std::string>> shared_options(const TrainArgs& a);

}  // namespace gpt
