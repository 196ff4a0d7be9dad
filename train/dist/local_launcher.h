// `gpt-train --nproc-per-node N ...`: this process becomes a launcher on one host, like
// `torchrun --standalone --nproc-per-node N`. It picks a free local port (or MASTER_PORT),
// starts N copies of itself without --nproc-per-node, with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and MASTER_PORT set and the rest of the environment
// passed through (NCCL_*, CUDA_VISIBLE_DEVICES, ...), forwards each child's stdout and stderr
// line by line (a line is never split), forwards SIGINT/SIGTERM/SIGUSR1, and exits with the first
// non-zero child status it sees (children that exit at the same moment are seen in any order)
// after stopping the others (SIGTERM, then SIGKILL after a grace period).
// With --device cpu (the default) each child gets --cpu-threads cores/N unless --cpu-threads is
// given.
#pragma once

#include <string>
#include <vector>

namespace gpt::dist {

// The value of --nproc-per-node N / --nproc-per-node=N in argv; 0 when absent. Throws
// suite::UsageError when the value is not a positive integer.
int find_nproc_per_node(int argc, char** argv);

// The children's arguments: argv without --nproc-per-node, plus --cpu-threads when due.
std::vector<std::string> child_arguments(int argc, char** argv, int nproc_per_node, int cores);

// Runs the launcher; returns the exit status for main. Refused (a one-line error, exit 2) inside
// an already launched rank.
int run_local_launcher(int argc, char** argv, int nproc_per_node);

}  // namespace gpt::dist
