// What gpt-launch writes into a results folder: the gpt-train command line, the Slurm batch script
// that runs it on every GPU of the layout (a heterogeneous job when GPU types are mixed), and the
// resolved configuration as YAML.
#pragma once

#include <string>
#include <vector>

#include "train/launch/config.h"

namespace launch {

struct JobSpec {
  Preset preset;  // overrides applied
  Cluster cluster;
  Layout layout;
  std::string name;
  std::string results_dir;  // absolute
  std::string gpt_train;    // absolute path of the gpt-train binary
  std::string device = "cuda";
  bool mock_data = false;   // no data-path: seeded random tokens (a benchmark)
  int signal_seconds = 120;  // USR1 this long before the time limit: save and requeue
  std::string revision;      // "VERSION (GIT REV)"
};

// gpt-train's argv (argv[0] = spec.gpt_train).
std::vector<std::string> train_argv(const JobSpec& spec);
// One shell word per argument, quoted where needed; joined by spaces.
std::string shell_join(const std::vector<std::string>& argv);
// The contents of job.sbatch.
std::string sbatch_script(const JobSpec& spec);
// The contents of config.yaml.
std::string resolved_yaml(const JobSpec& spec);

}  // namespace launch
