// Where this process stands in a multi-process job: rank, world size, local rank and the
// rendezvous address, from (in this order) explicit flags, torchrun's variables, or, only inside an
// srun step, Slurm's. This is the one place in train/ that reads the launcher's environment.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gpt::dist {

// gpt-train flags (-1 / empty / 0: not given).
struct LaunchFlags {
  int rank = -1, world_size = -1, local_rank = -1;
  std::string master_addr;
  int master_port = 0;
};

struct LaunchInfo {
  enum class Source { kSingle, kFlags, kTorchrun, kSlurm };
  Source source = Source::kSingle;
  int rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // torchrun with TORCHELASTIC_USE_AGENT_STORE=True: its TCPStore already listens at
  // master_addr:master_port; every rank (rank 0 too) connects to it as a client.
  bool agent_store = false;
  // torchrun's TORCHELASTIC_RESTART_COUNT: keys of an earlier attempt in its store are not ours.
  int restart_count = 0;
  // Why a single process was chosen although the environment hints at more (e.g. SLURM_NTASKS=8
  // outside an srun step); printed once at start. Empty when there is nothing to say.
  std::string note;
  bool distributed() const { return world_size > 1; }
};

// Reads the environment through `env` (a lookup injectable for tests; nullptr = unset).
using EnvLookup = std::function<const char*(const char*)>;
LaunchInfo discover_launch(const LaunchFlags& flags, const EnvLookup& env);
LaunchInfo discover_launch(const LaunchFlags& flags);  // the process environment

// For the --nproc-per-node launcher: why this process already is a rank of a launched job (RANK /
// WORLD_SIZE set by torchrun or a launcher, or an srun step of several tasks); empty when not.
std::string launched_rank_reason(const EnvLookup& env);
std::string launched_rank_reason();
// MASTER_PORT from the environment (0 when unset); throws suite::UsageError when malformed.
int environment_master_port();

// Sets NCCL_NVLS_ENABLE=0 unless the user set it: NVLink multicast must stay off on the shared
// device hosts. Called before NCCL initialises.
void default_nccl_environment();

// Slurm's compressed host list: "n060", "n[060-067,070],gpu[1-2]" -> each host, zero padding kept.
// Throws suite::UsageError on a malformed list.
std::vector<std::string> expand_slurm_nodelist(const std::string& list);

}  // namespace gpt::dist
