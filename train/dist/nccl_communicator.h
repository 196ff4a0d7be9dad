// The CUDA backend's communicator: NCCL with a non-blocking communicator (ncclConfig_t.blocking
// = 0), so that no call can hang the process: every call's completion is polled with a timeout,
// asynchronous errors are polled by the watchdog (poll()/failure()), and abort() runs
// ncclCommAbort. Collectives are queued on the stream given at construction (or set_stream);
// buffers are in device memory. It never uses NVLink multicast.
#pragma once

#ifdef GPT_HAVE_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "train/dist/communicator.h"

namespace gpt::dist {

class NcclCommunicator : public Communicator {
 public:
  // A new unique id (ncclGetUniqueId) as the bytes rank 0 publishes in the rendezvous.
  static std::string make_unique_id();
  // "NCCL 2.28.3 (built with 2.28.3)".
  static std::string version_text();

  // Joins the communicator of `size` ranks named by `unique_id` on `device` (cudaSetDevice is
  // called first). Waits for the initialisation at most timeout_s. Rank 0 prints the NCCL version
  // to stderr when print_version. Throws suite::ToolError on failure.
  NcclCommunicator(const std::string& unique_id, int rank, int size, int device,
                   cudaStream_t stream, double timeout_s, bool print_version = true);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "nccl"; }
  void set_stream(cudaStream_t s) { stream_ = s; }
  cudaStream_t stream() const { return stream_; }
  ncclComm_t handle() const { return comm_; }

  void all_reduce_sum(void* buf, size_t n, DType t) override;
  void reduce_scatter_sum(const void* in, void* out, size_t n, DType t) override;
  void all_gather(const void* in, void* out, size_t n, DType t) override;
  void broadcast(void* buf, size_t n, DType t, int root) override;
  void send(const void* buf, size_t n, DType t, int peer) override;
  void recv(void* buf, size_t n, DType t, int peer) override;
  void send_recv(const std::vector<P2POp>& ops) override;
  // Waits for the stream (polling, so an abort or an NCCL error ends the wait).
  void synchronize() override;
  uint64_t seq() const override { return seq_; }
  // Reports completed collectives (their events) to the listener; records an async error.
  void poll() override;
  void abort() override;
  std::string failure() const override;
  void host_reduce_f64(double* v, size_t n, bool max) override;
  // Collectives captured into a CUDA graph (Communicator::begin_capture): recorded by name, and
  // counted and watched at each launch instead, with one event after the launch on its stream
  // (an event recorded inside a capture cannot be queried by the watchdog's thread).
  void begin_capture() override;
  std::vector<std::string> end_capture() override;
  void issue_captured(const std::vector<std::string>& names, void* stream) override;

 private:
  void check(ncclResult_t r, const char* what);
  // Runs one NCCL call under call_mu_, so that abort() from the watchdog's thread never frees the
  // communicator under a call (every call returns at once in non-blocking mode).
  template <class F> ncclResult_t call(F f);
  // Non-blocking mode: waits until the last call is no longer in progress.
  void wait_issued(const char* what);
  // A collective's sequence number and the listener's issued() (while capturing: its name
  // recorded, 0); end records its completion event on `s` (null: stream_; nothing while capturing).
  uint64_t begin(const char* name);
  void end(uint64_t seq, cudaStream_t s = nullptr);

  int rank_ = 0, size_ = 1, device_ = 0;
  double timeout_s_ = 600;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  uint64_t seq_ = 0;
  bool capturing_ = false;
  std::vector<std::string> captured_;  // the names of the collectives captured so far
  std::atomic<bool> aborted_{false};
  std::mutex call_mu_;     // held during every NCCL call and by abort()
  mutable std::mutex mu_;  // guards in_flight_, free_events_, failure_
  struct InFlight {
    uint64_t seq;
    cudaEvent_t done;
  };
  std::deque<InFlight> in_flight_;
  std::vector<cudaEvent_t> free_events_;
  std::string failure_;
  double* host_buf_dev_ = nullptr;
  size_t host_buf_n_ = 0;
};

}  // namespace gpt::dist

#endif  // GPT_HAVE_NCCL
