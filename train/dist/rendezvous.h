// The rendezvous: every rank meets the others through the TCP store at MASTER_ADDR:MASTER_PORT
// (served by rank 0, or torchrun's own store), publishes its host, local rank and configuration,
// and receives rank 0's NCCL unique id. A rank whose configuration differs is refused, naming the
// options; ranks that do not arrive within the timeout are named.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "train/dist/launch_env.h"
#include "train/dist/tcp_store.h"

namespace gpt::dist {

// option=value pairs that must agree on every rank (model shape, batch sizes, seeds, ...).
using ConfigOptions = std::vector<std::pair<std::string, std::string>>;

struct RendezvousOptions {
  double timeout_s = 600;  // --distributed-timeout-minutes × 60
  ConfigOptions config;
  // Rank 0's opaque blob for every rank (the NCCL unique id); ignored on the other ranks.
  std::string nccl_id;
  // This rank's host name for messages and the rank table; empty: gethostname.
  std::string host;
};

class Rendezvous {
 public:
  // Meets every rank of `launch` (world size > 1). Throws suite::ToolError with one line:
  // "cannot reach the rendezvous at HOST:PORT after T s (...); rank 0 serves it",
  // "port PORT at HOST is in use", "ranks 2, 3 did not arrive at the rendezvous at HOST:PORT
  // within T s", "rank 1 (host h) runs with a configuration that differs from rank 0's:
  // hidden-size=64 (rank 0: 128)", "rank 1 was started twice".
  static std::unique_ptr<Rendezvous> join(const LaunchInfo& launch, const RendezvousOptions& opt);
  // Rank 0 keeps serving the store until the other ranks have closed their connections (at most
  // the timeout), unless it is unwinding from an error. Destroy (or finish) the Watchdog first:
  // its connection counts as one that has not closed.
  ~Rendezvous();

  int rank() const { return rank_; }
  int world_size() const { return static_cast<int>(hosts_.size()); }
  const std::string& host(int rank) const { return hosts_.at(rank); }
  int local_rank(int rank) const { return local_ranks_.at(rank); }
  const std::vector<std::string>& hosts() const { return hosts_; }
  const std::string& nccl_id() const { return nccl_id_; }
  double timeout_s() const { return timeout_s_; }
  // This rank's connection to the store (keys under this job's prefix).
  TcpStore& store() { return *store_; }
  // A second connection with the same prefix (the watchdog's, so that its heartbeats never wait
  // behind the main thread's queries).
  std::unique_ptr<TcpStore> open_store() const;
  // On rank 0 serving the store: waits (at most timeout_s) until no more than `own` connections
  // (this process's: this object's, the watchdog's) are open, so that the other ranks can still
  // read a verdict before the store goes away with this process. No-op elsewhere.
  void linger(double timeout_s, int own) const;
  // "HOST:PORT" of the store.
  const std::string& address() const { return store_->address(); }

 private:
  Rendezvous() = default;
  int rank_ = 0;
  double timeout_s_ = 600;
  std::string store_host_, prefix_;
  int store_port_ = 0;
  std::vector<std::string> hosts_;
  std::vector<int> local_ranks_;
  std::string nccl_id_;
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStore> store_;
};

// option=value lines, and the options whose values differ between two such texts, as
// "name=mine (rank 0: theirs)" items joined by ", ".
std::string config_text(const ConfigOptions& config);
std::string config_difference(const std::string& mine, const std::string& rank0);

}  // namespace gpt::dist
