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
  // Waits until every queued collective of this rank has completed (NCCL: its stream; TCP: no-op).
  virtual void synchronize() = 0;
  // The sequence number of the last collective issued (0 before the first).
  virtual uint64_t seq() const = 0;
};

// Host-side agreement between the ranks of the whole job (small values, e.g. a stop decision, a
// loss to print): the implementation goes through the TCP store or the TCP communicator.
double host_all_reduce_max(Communicator& comm, double v);
double host_all_reduce_sum(Communicator& comm, double v);

}  // namespace gpt::dist
