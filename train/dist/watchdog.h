// The watchdog: a thread on every rank that reports, every beat, that the rank lives and which
// collective it has reached, and ends the job with one line naming the rank at fault when
//   - a rank died: its store connection closed without a goodbye (our store lists it at once),
//     or its communicator connection closed;
//   - this rank has waited for collective #SEQ longer than the timeout: the ranks whose last
//     heartbeat shows they never issued #SEQ are named as late (a rank stopped with SIGSTOP stops
//     beating and stays behind). The same for the collectives of each watched group communicator
//     (tensor and pipeline parallelism's groups, numbered per group; watch_group), among the
//     group's members.
// The first rank to decide publishes its line in the store as the job's verdict; the other ranks'
// watchdogs end with the same line at their next beat, so every survivor names the same rank.
// The last line is `gpt-train: rank R (host H): died` or
// `gpt-train: rank R (host H): did not reach all_reduce #SEQ within T s`; the process exits 1
// after the abort hook (NCCL: ncclCommAbort) ran. Never a silent hang.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "train/dist/communicator.h"

namespace gpt::dist {

class Rendezvous;
class TcpStore;

struct WatchdogOptions {
  double timeout_s = 600;  // --distributed-timeout-minutes × 60
  double beat_s = 1.0;     // heartbeat period
  std::string tool = "gpt-train";
  // Runs once before the process ends (after the communicator's abort()).
  std::function<void()> on_abort;
  // Ends the process with `line` (without the tool prefix). Default: prints
  // "<tool>: <line>" to stderr as the last line and _Exit(1). Tests record it instead.
  std::function<void(const std::string& line)> on_fatal;
  // The store is served by rank 0 (not torchrun's agent): losing it means rank 0 died.
  bool store_is_rank0 = true;
  // Runs after the verdict is published and before on_fatal: rank 0 keeps serving the store a
  // moment so that the other ranks read the verdict (Watchdog::start sets Rendezvous::linger).
  std::function<void()> before_exit;
};

class Watchdog : public CollectiveListener {
 public:
  // Starts watching the job of `rv` over a second store connection; registers itself as `comm`'s
  // listener (and, for the TCP communicator, as the one that names a dead peer). comm may be null.
  static std::unique_ptr<Watchdog> start(Rendezvous& rv, Communicator* comm, WatchdogOptions opt);
  // The same over a given store connection (keys "alive/R", "hb/R", "dead").
  Watchdog(std::unique_ptr<TcpStore> store, int rank, std::vector<std::string> hosts,
           Communicator* comm, WatchdogOptions opt);
  // Without an exception in flight: finish() (a goodbye). While unwinding from an error: no
  // goodbye, so that the other ranks see this rank die at once instead of waiting for it.
  ~Watchdog() override;
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Collective `name` #seq issued / every collective up to #seq completed on this rank.
  void note_collective(const std::string& name, uint64_t seq);
  void note_done(uint64_t seq);
  // Also watches `comm` (may be null: then only its listener, returned, is fed), a group of
  // `members` (world ranks) that every rank makes as its `index`-th group (the same index on all
  // ranks, so that heartbeats compare); `label` names it in messages ("tensor-parallel group").
  // Call before the group's first collective; the watchdog outlives no group it watches.
  CollectiveListener* watch_group(Communicator* comm, int index, const std::string& label,
                                  std::vector<int> members);
  void issued(const char* name, uint64_t seq) override { note_collective(name, seq); }
  void completed(uint64_t seq) override { note_done(seq); }

  // Says goodbye (this rank ended normally) and stops the thread. Idempotent.
  void finish();
  // The job's verdict: the line another rank's watchdog published, else the first rank the store
  // lists as dead ("rank R (host H): died"), waiting up to wait_s for either; `fallback` if none.
  std::string first_dead(double wait_s, const std::string& fallback);
  // Ends the job with `line`: publishes it as the verdict (the first one wins, and every rank's
  // watchdog ends with it), aborts the communicator, runs before_exit and on_fatal.
  void fatal(const std::string& line);

 private:
  void run();
  void stop_thread();  // wakes and joins the thread (stopping_ set), detaches from the comms
  void beat();
  std::string who(int rank) const;

  std::unique_ptr<TcpStore> store_;
  int rank_;
  std::vector<std::string> hosts_;
  Communicator* comm_;
  WatchdogOptions opt_;

  struct Pending {
    std::string name;
    uint64_t seq;
    std::chrono::steady_clock::time_point since;
  };
  // A watched group: its own numbering, pending collectives and members.
  struct Group : CollectiveListener {
    Watchdog* dog = nullptr;
    Communicator* comm = nullptr;
    int index = 0;
    std::string label;
    std::vector<int> members;
    std::deque<Pending> pending;  // guarded by dog->mu_
    uint64_t issued_seq = 0;
    void issued(const char* name, uint64_t seq) override;
    void completed(uint64_t seq) override;
  };
  // The line naming who is late for `oldest` among `ranks` (world ranks), or "" when nobody is;
  // group < 0: the world's numbering.
  std::vector<std::string> late_ranks(const Pending& oldest, const std::vector<int>& ranks,
                                      int group, const std::string& label);
  std::string beat_value() const;  // under mu_
  std::mutex mu_;  // guards pending_, issued_, done_, the groups' state and the store
  std::deque<Pending> pending_;
  uint64_t issued_ = 0, done_ = 0;
  std::string issued_name_;
  uint64_t beats_ = 0;
  std::vector<std::unique_ptr<Group>> groups_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::atomic<bool> fatal_{false};
  std::thread thread_;
};

// True once a watchdog has begun ending the process: errors that follow from its abort (a
// communicator call, a CUDA synchronisation) should not print a line of their own.
bool watchdog_ending();
// Blocks the calling thread until the watchdog has ended the process (its line stays the last).
[[noreturn]] void wait_for_watchdog_exit();

}  // namespace gpt::dist
