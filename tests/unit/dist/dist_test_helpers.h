// Helpers for tests that run several ranks of one job as threads of the test process.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "train/dist/launch_env.h"
#include "train/dist/tcp_store.h"

namespace dist_test {

// A port that was free a moment ago (a server bound to 0, then closed).
inline int free_port() {
  gpt::dist::TcpStoreServer probe("127.0.0.1", 0);
  return probe.port();
}

inline gpt::dist::LaunchInfo launch_of(int rank, int world, int port) {
  gpt::dist::LaunchInfo info;
  info.source = gpt::dist::LaunchInfo::Source::kFlags;
  info.rank = rank;
  info.world_size = world;
  info.local_rank = rank;
  info.local_world_size = world;
  info.master_addr = "127.0.0.1";
  info.master_port = port;
  return info;
}

// Runs body(rank) for every rank in its own thread; each rank's exception text (empty: none).
inline std::vector<std::string> run_ranks(int world, const std::function<void(int)>& body) {
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        if (errors[r].empty()) errors[r] = "(empty error)";
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace dist_test
