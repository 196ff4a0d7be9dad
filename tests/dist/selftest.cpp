// dist-selftest: a small multi-process program for the end-to-end tests of train/dist. It finds
// its rank like gpt-train (flags, torchrun's or Slurm's variables, --nproc-per-node), meets the
// other ranks, runs all-reduces over the TCP communicator under the watchdog, and checks on every
// rank that all_reduce_sum equals reduce_scatter_sum + all_gather and the rank-order sum of every
// rank's inputs, bit for bit. --fault exit|stop makes --fault-rank die or stop after the first
// collective, so that the tests see the survivors name it; --chatter N prints N long lines first
// (the launcher must forward each whole); --wait-signal reports the signal the launcher forwards.
//
//   dist-selftest --nproc-per-node 3 --elements 100000 --iters 5
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "train/dist/launch_env.h"
#include "train/dist/local_launcher.h"
#include "train/dist/rendezvous.h"
#include "train/dist/tcp_communicator.h"
#include "train/dist/watchdog.h"

namespace {

float input(int rank, size_t k, int iter) {
  // Values of mixed magnitude so that the order of the additions shows in the bits.
  uint32_t h = static_cast<uint32_t>(k * 2654435761u + rank * 40503u + iter * 9973u);
  return static_cast<float>(static_cast<int32_t>(h % 2000001) - 1000000) / (1 + (h >> 28)) *
         (rank % 2 ? 1e-3f : 1.0f);
}

int body(int argc, char** argv) {
  if (int n = gpt::dist::find_nproc_per_node(argc, argv))
    return gpt::dist::run_local_launcher(argc, argv, n);
  gpt::dist::LaunchFlags flags;
  double timeout_s = 60;
  size_t elements = 1000;
  int iters = 3, fault_rank = 1, chatter = 0;
  bool wait_signal = false;
  std::string fault = "none", host, hidden = "64";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw suite::UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--rank") flags.rank = std::stoi(next());
    else if (a == "--world-size") flags.world_size = std::stoi(next());
    else if (a == "--local-rank") flags.local_rank = std::stoi(next());
    else if (a == "--master-addr") flags.master_addr = next();
    else if (a == "--master-port") flags.master_port = std::stoi(next());
    else if (a == "--timeout-s") timeout_s = std::stod(next());
    else if (a == "--elements") elements = std::stoul(next());
    else if (a == "--iters") iters = std::stoi(next());
    else if (a == "--fault") fault = next();
    else if (a == "--fault-rank") fault_rank = std::stoi(next());
    else if (a == "--host") host = next();
    else if (a == "--hidden-size") hidden = next();
    else if (a == "--chatter") chatter = std::stoi(next());
    else if (a == "--wait-signal") wait_signal = true;
    else if (a == "--cpu-threads") next();  // given by the launcher; unused here
    else throw suite::UsageError("unknown option " + a);
  }
  auto info = gpt::dist::discover_launch(flags);
  if (!info.note.empty()) std::cerr << "dist-selftest: " << info.note << "\n";
  // Long lines written without flushing: the pipe to the launcher cuts them anywhere.
  const std::string filler(2000, 'x');
  for (int k = 0; k < chatter; ++k)
    std::cout << "rank " << info.rank << " line " << k << ": " << filler << " end\n";
  if (wait_signal) {
    // Says it is ready, then reports the first of SIGINT/SIGTERM/SIGUSR1 it receives.
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGUSR1}) sigaddset(&set, sig);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    std::cout << "rank " << info.rank << " ready" << std::endl;
    int sig = 0;
    sigwait(&set, &sig);
    std::cout << "rank " << info.rank << " got " << strsignal(sig) << std::endl;
    return 0;
  }
  if (!info.distributed()) {
    std::cout << "rank 0 of 1: nothing to exchange\n";
    return 0;
  }
  gpt::dist::RendezvousOptions ro;
  ro.timeout_s = timeout_s;
  ro.host = host;
  ro.config = {{"hidden-size", hidden}, {"elements", std::to_string(elements)}};
  auto rv = gpt::dist::Rendezvous::join(info, ro);
  gpt::dist::TcpCommunicator comm(*rv);
  gpt::dist::WatchdogOptions wo;
  wo.timeout_s = timeout_s;
  wo.beat_s = 0.2;
  wo.tool = "dist-selftest";
  wo.store_is_rank0 = !info.agent_store;
  auto wd = gpt::dist::Watchdog::start(*rv, &comm, wo);

  const int r = comm.rank(), w = comm.size();
  const size_t chunk = (elements + w - 1) / w;
  double checksum = 0;
  for (int it = 1; it <= iters; ++it) {
    std::vector<float> ar(elements), in(chunk * w, 0.0f), part(chunk), gathered(chunk * w);
    for (size_t k = 0; k < elements; ++k) ar[k] = in[k] = input(r, k, it);
    comm.all_reduce_sum(ar.data(), elements, gpt::dist::DType::kF32);
    comm.reduce_scatter_sum(in.data(), part.data(), chunk, gpt::dist::DType::kF32);
    comm.all_gather(part.data(), gathered.data(), chunk, gpt::dist::DType::kF32);
    for (size_t k = 0; k < elements; ++k) {
      float s = input(0, k, it);
      for (int p = 1; p < w; ++p) s += input(p, k, it);
      if (std::memcmp(&s, &ar[k], 4) != 0 || std::memcmp(&s, &gathered[k], 4) != 0)
        throw suite::ToolError("rank " + std::to_string(r) + ": element " + std::to_string(k) +
                               " of iteration " + std::to_string(it) + " differs");
      checksum += ar[k];
    }
    if (it == 1 && r == fault_rank) {
      if (fault == "exit") _exit(3);
      if (fault == "stop") raise(SIGSTOP);
    }
  }
  double top = gpt::dist::host_all_reduce_max(comm, r);
  if (top != w - 1) throw suite::ToolError("host_all_reduce_max gave " + std::to_string(top));
  std::cout << "rank " << r << " of " << w << " on " << rv->host(r) << " (local rank "
            << info.local_rank << ", store " << rv->address() << "): " << iters
            << " all-reduces of " << elements << " floats agree, checksum " << checksum
            << std::endl;
  wd->finish();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return suite::run_tool("dist-selftest", argc, argv, body); }
