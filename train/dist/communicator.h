// Collectives between the ranks of one process group, with two implementations: NCCL for the CUDA
// backend (buffers in device memory, work queued on a stream) and TCP sockets for the CPU backend
// (buffers in host memory, done when the call returns), so multi-process training runs in CI.
//
// Every rank of the group must call the same collectives in the same order. Each call gets the next
// sequence number (seq(), 1-based); the watchdog reports a rank that does not reach a collective by
// its number. Sums are deterministic: the CPU implementation adds contributions in rank order 0..N-1
// for every element, so all_reduce_sum == reduce_scatter_sum followed by all_gather, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpt::dist {

enum class DType { kF32, kBF16, kF64, kI64 };
size_t dtype_bytes(DType t);
const char* dtype_name(DType t);

// One transfer of a batch (Communicator::send_recv).
struct P2POp {
  bool send = false;
  void* buf = nullptr;  // read when sending, written when receiving
  size_t n = 0;
  DType t = DType::kF32;
  int peer = 0;  // rank within the group
};

// Told when each collective is issued and when it has completed on this rank (the watchdog).
// Called from the thread that issues collectives, or (completion of queued NCCL work) from the
// thread that polls the communicator.
class CollectiveListener {
 public:
  virtual ~CollectiveListener() = default;
  virtual void issued(const char* name, uint64_t seq) = 0;
  virtual void completed(uint64_t seq) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // within this group
  virtual int size() const = 0;
  // "nccl" or "tcp".
  virtual std::string kind() const = 0;

  // buf[0:n] = the sum of every rank's buf[0:n].
  virtual void all_reduce_sum(void* buf, size_t n, DType t) = 0;
  // in[0 : n·size()]; out[0:n] = the sum over ranks of in[rank()·n : (rank()+1)·n].
  virtual void reduce_scatter_sum(const void* in, void* out, size_t n, DType t) = 0;
  // in[0:n] from every rank; out[r·n : (r+1)·n] = rank r's in. in may equal out + rank()·n.
  virtual void all_gather(const void* in, void* out, size_t n, DType t) = 0;
  virtual void broadcast(void* buf, size_t n, DType t, int root) = 0;
  // Point to point (pipeline stages): matched pairs in the same order on both sides.
  virtual void send(const void* buf, size_t n, DType t, int peer) = 0;
  virtual void recv(void* buf, size_t n, DType t, int peer) = 0;
  // Transfers that progress together (Megatron's batch_isend_irecv): each completes once its
  // peer posts the match, and the call returns when all have (NCCL: queued, as a group). At most
  // one send and one receive per peer. Pipeline stages exchange activations and gradients with
  // it, so that two neighbours sending to each other never both wait in a send.
  virtual void send_recv(const std::vector<P2POp>& ops);
  // Waits until every queued collective of this rank has completed (NCCL: its stream; TCP: no-op).
  virtual void synchronize() = 0;
  // The sequence number of the last collective issued (0 before the first). Point-to-point
  // send/recv do not take one: only ranks of a pair see them.
  virtual uint64_t seq() const = 0;

  // Optional: report issued/completed collectives to `l` (nullptr: stop).
  virtual void set_listener(CollectiveListener* l) { listener_ = l; }
  // Checks queued work (NCCL: completed events, asynchronous errors); called by the watchdog's
  // thread every beat. Throws nothing; reports completions to the listener.
  virtual void poll() {}
  // Makes every blocked or later call fail at once (the watchdog's last act); thread-safe.
  virtual void abort() {}
  // Non-empty once the communicator broke on its own (NCCL's asynchronous error): the watchdog
  // ends the job with it.
  virtual std::string failure() const { return std::string(); }
  // Host values reduced over the group (sum in rank order, or max), a collective like the others.
  virtual void host_reduce_f64(double* v, size_t n, bool max);

  // CUDA graphs (NCCL): between begin_capture() and end_capture() the collectives go into the
  // stream capture under way on their stream. Nothing is issued then, so they take no sequence
  // number and no completion event; end_capture returns their names in order. Each launch of the
  // graph is then issue_captured(names, stream): the next sequence numbers (the listener told, as
  // for issued collectives) and one completion event on `stream` (a cudaStream_t) after the
  // launch. Every rank captures and launches the same graphs, so the numbers stay the same on all
  // ranks. Not the TCP communicator's (the CPU has no graphs).
  virtual void begin_capture();
  virtual std::vector<std::string> end_capture();
  virtual void issue_captured(const std::vector<std::string>& names, void* stream);

 protected:
  CollectiveListener* listener_ = nullptr;
};

// Host-side agreement between the ranks of the group (small values, e.g. a stop decision, a loss
// to print), through host_reduce_f64 (NCCL: a small device buffer; TCP: the sockets).
double host_all_reduce_max(Communicator& comm, double v);
double host_all_reduce_sum(Communicator& comm, double v);

}  // namespace gpt::dist
