// `gpt-plan bandwidth`: measures the all-reduce, reduce-scatter, all-gather and point-to-point
// bandwidths of the project's communicator (TCP with --device cpu, NCCL with --device cuda) between
// the ranks of a job started by srun, torchrun or --nproc-per-node, and writes the
// measured-bandwidth file a cluster file's `bandwidth-files` reads (data/README.md, "Measured
// bandwidths"). Collectives run over every rank (inside a node when the job has one node, across
// nodes otherwise); point-to-point runs between rank 0 and the first rank on its node and the
// first rank on another node. Times are the slowest rank's; bus bandwidth as nccl-tests defines it.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "train/dist/communicator.h"
#include "train/dist/launch_env.h"

namespace plan {

struct BandwidthOptions {
  std::string device = "cpu";  // cpu (TCP) or cuda (NCCL)
  std::vector<size_t> sizes = {1u << 20, 16u << 20, 64u << 20};  // bytes per collective
  int iters = 5, warmup = 1;
  double timeout_s = 600;
  std::string output;  // rank 0 writes it
  gpt::dist::LaunchFlags launch;
};

// Runs on every rank; rank 0 reports progress on `log` and writes the file. Throws
// suite::UsageError when the process is not one of several ranks.
int run_bandwidth(const BandwidthOptions& o, std::ostream& log);

// The measurement itself over `comm` (every rank calls it; host_of[r] names rank r's host): the
// measured-bandwidth file's text on rank 0, empty elsewhere. `gpt-train --profile-layers` calls it
// on its own communicator; o.output is not used.
std::string measure_bandwidths(gpt::dist::Communicator& comm, const std::vector<std::string>& host_of,
                               const BandwidthOptions& o, std::ostream& log);

// "64M" / "1G" / "4096" -> bytes; throws suite::UsageError naming `what`.
size_t parse_size(const std::string& text, const char* what);

}  // namespace plan
