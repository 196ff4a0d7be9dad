// The CPU backend's communicator: a full mesh of TCP connections between the ranks of a group,
// set up through the rendezvous' store. Collectives are done when the call returns. Every sum
// adds the contributions in rank order 0..N-1 (bf16 accumulated in fp32 and rounded once), and
// all_reduce_sum is a reduce-scatter followed by an all-gather over the same code, so it equals
// reduce_scatter_sum + all_gather bit for bit and every rank gets identical bytes.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "train/dist/communicator.h"

namespace gpt::dist {

class Rendezvous;
class TcpStore;

class TcpCommunicator : public Communicator {
 public:
  // The whole job's group (every rank of the rendezvous).
  explicit TcpCommunicator(Rendezvous& rv, const std::string& group = "world");
  // A group of `size` ranks meeting through `store` under keys "tcp/<group>/..."; hosts[r] names
  // rank r in messages. Each rank listens on a free port and advertises the address at which the
  // store sees it. Throws suite::ToolError naming a rank that cannot be reached within
  // `timeout_s`.
  TcpCommunicator(TcpStore& store, int rank, int size, std::vector<std::string> hosts,
                  double timeout_s, const std::string& group = "world");
  ~TcpCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "tcp"; }
  void all_reduce_sum(void* buf, size_t n, DType t) override;
  void reduce_scatter_sum(const void* in, void* out, size_t n, DType t) override;
  void all_gather(const void* in, void* out, size_t n, DType t) override;
  void broadcast(void* buf, size_t n, DType t, int root) override;
  void send(const void* buf, size_t n, DType t, int peer) override;
  void recv(void* buf, size_t n, DType t, int peer) override;
  void send_recv(const std::vector<P2POp>& ops) override;
  void synchronize() override {}
  uint64_t seq() const override { return seq_; }
  void abort() override;
  void host_reduce_f64(double* v, size_t n, bool max) override;
  // Names the failure when the connection to `peer` closes (the watchdog looks up the first rank
  // that died, since a closed connection may be a survivor that stopped); null: "rank R (host H):
  // died".
  void set_failure_explainer(std::function<std::string(int peer)> f) { explain_ = std::move(f); }

 private:
  enum class Op : uint32_t { kReduce = 1, kGather, kBroadcast, kP2P };
  struct Xfer {
    int peer;
    const char* send = nullptr;
    size_t send_bytes = 0;
    char* recv = nullptr;
    size_t recv_bytes = 0;
    bool sends = true, receives = true;  // a message (header + bytes) each way, even of 0 bytes
  };
  // Moves every transfer at once (poll over the sockets), checking each message's header.
  void exchange(std::vector<Xfer>& xs, Op op, const char* name, uint64_t seq);
  // out (counts[rank] elements) = the reduction in rank order of every rank's in[off[rank]...].
  void reduce_chunks(const char* in, char* out, const std::vector<size_t>& counts,
                     const std::vector<size_t>& offs, DType t, bool max, const char* name);
  void gather_chunks(const char* mine, char* out, const std::vector<size_t>& counts,
                     const std::vector<size_t>& offs, DType t, const char* name);
  uint64_t begin(const char* name);
  void end(uint64_t seq);
  [[noreturn]] void peer_failed(int peer);

  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  std::vector<int> fds_;  // fds_[peer]; -1 for this rank
  uint64_t seq_ = 0;
  std::atomic<bool> aborted_{false};
  std::function<std::string(int)> explain_;
};

}  // namespace gpt::dist
