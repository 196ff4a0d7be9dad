#include "train/dist/nccl_communicator.h"

#ifdef GPT_HAVE_NCCL

#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>
#include <utility>

#include "common/cli/error.h"
#include "train/dist/launch_env.h"
#include "train/dist/watchdog.h"

namespace gpt::dist {
namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::kF32: return ncclFloat32;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF64: return ncclFloat64;
    case DType::kI64: return ncclInt64;
  }
  return ncclFloat32;
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw suite::ToolError(std::string(what) + ": " + cudaGetErrorString(e));
}

std::string version_string(int v) {
  // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace

std::string NcclCommunicator::make_unique_id() {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    throw suite::ToolError(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
  return std::string(id.internal, sizeof(id.internal));
}

std::string NcclCommunicator::version_text() {
  int v = 0;
  ncclGetVersion(&v);
  return "NCCL " + version_string(v) + " (built with " + version_string(NCCL_VERSION_CODE) + ")";
}

NcclCommunicator::NcclCommunicator(const std::string& unique_id, int rank, int size, int device,
                                   cudaStream_t stream, double timeout_s, bool print_version)
    : rank_(rank), size_(size), device_(device), timeout_s_(timeout_s), stream_(stream) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof(id.internal))
    throw suite::ToolError("the NCCL unique id from rank 0 has " +
                           std::to_string(unique_id.size()) + " bytes, not " +
                           std::to_string(sizeof(id.internal)));
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  default_nccl_environment();
  if (print_version && rank == 0) std::cerr << "gpt-train: " << version_text() << "\n";
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm_, size, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    std::string why = ncclGetErrorString(r);
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    throw suite::ToolError("NCCL initialisation failed on rank " + std::to_string(rank) + ": " +
                           why);
  }
  try {
    wait_issued("NCCL initialisation");
  } catch (...) {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  if (comm_) {
    if (aborted_ || !failure().empty()) {
      ncclCommAbort(comm_);
    } else {
      // Finalize flushes queued work; in non-blocking mode it completes asynchronously.
      ncclResult_t r = ncclCommFinalize(comm_);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      ncclResult_t st = r;
      while (r == ncclSuccess || r == ncclInProgress) {
        if (ncclCommGetAsyncError(comm_, &st) != ncclSuccess || st != ncclInProgress) break;
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (st == ncclSuccess)
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
    }
  }
  for (auto& f : in_flight_) cudaEventDestroy(f.done);
  for (auto e : free_events_) cudaEventDestroy(e);
  if (host_buf_dev_) cudaFree(host_buf_dev_);
}

template <class F> ncclResult_t NcclCommunicator::call(F f) {
  std::lock_guard<std::mutex> lock(call_mu_);
  if (aborted_ || !comm_) {
    if (watchdog_ending()) wait_for_watchdog_exit();
    throw suite::ToolError("the NCCL communicator was aborted");
  }
  return f();
}

void NcclCommunicator::check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  if (aborted_ && watchdog_ending()) wait_for_watchdog_exit();
  const char* last = comm_ ? ncclGetLastError(comm_) : nullptr;
  throw suite::ToolError(std::string(what) + " failed on rank " + std::to_string(rank_) + ": " +
                         ncclGetErrorString(r) + (last && *last ? std::string(" (") + last + ")" : ""));
}

void NcclCommunicator::wait_issued(const char* what) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::microseconds(static_cast<int64_t>(timeout_s_ * 1e6));
  int spins = 0;
  while (true) {
    if (aborted_) {
      if (watchdog_ending()) wait_for_watchdog_exit();
      throw suite::ToolError("the NCCL communicator was aborted");
    }
    ncclResult_t st = ncclSuccess;
    ncclResult_t r = call([&] { return ncclCommGetAsyncError(comm_, &st); });
    check(r, "ncclCommGetAsyncError");
    if (st == ncclSuccess) return;
    if (st != ncclInProgress) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (failure_.empty()) failure_ = std::string("NCCL error: ") + ncclGetErrorString(st);
      }
      check(st, what);
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw suite::ToolError(std::string(what) + " did not complete within " +
                             std::to_string(static_cast<long>(timeout_s_)) + " s on rank " +
                             std::to_string(rank_));
    if (++spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

uint64_t NcclCommunicator::begin(const char* name) {
  if (aborted_) {
    if (watchdog_ending()) wait_for_watchdog_exit();
    throw suite::ToolError("the NCCL communicator was aborted");
  }
  if (capturing_) {
    captured_.push_back(name);
    return 0;
  }
  ++seq_;
  if (listener_) listener_->issued(name, seq_);
  return seq_;
}

// Records an event after the collective so that poll() can tell the listener when it completed.
void NcclCommunicator::end(uint64_t seq, cudaStream_t s) {
  if (capturing_) return;
  cudaEvent_t e = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_events_.empty()) {
      e = free_events_.back();
      free_events_.pop_back();
    }
  }
  if (!e) cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  cuda_check(cudaEventRecord(e, s ? s : stream_), "cudaEventRecord");
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.push_back({seq, e});
}

void NcclCommunicator::begin_capture() {
  capturing_ = true;
  captured_.clear();
}

std::vector<std::string> NcclCommunicator::end_capture() {
  capturing_ = false;
  return std::exchange(captured_, {});
}

void NcclCommunicator::issue_captured(const std::vector<std::string>& names, void* stream) {
  if (names.empty()) return;
  // The graph's collectives complete in their order (each rank's NCCL runs them in issue order):
  // one event after the launch completes them all for the watchdog.
  uint64_t last = 0;
  for (const std::string& n : names) last = begin(n.c_str());
  end(last, static_cast<cudaStream_t>(stream));
}

void NcclCommunicator::poll() {
  if (aborted_) return;
  cudaSetDevice(device_);  // the watchdog's thread
  uint64_t completed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!in_flight_.empty()) {
      cudaError_t q = cudaEventQuery(in_flight_.front().done);
      if (q == cudaErrorNotReady) break;
      if (q != cudaSuccess) {
        if (failure_.empty()) failure_ = std::string("CUDA error: ") + cudaGetErrorString(q);
        break;
      }
      completed = in_flight_.front().seq;
      free_events_.push_back(in_flight_.front().done);
      in_flight_.pop_front();
    }
  }
  if (completed && listener_) listener_->completed(completed);
  ncclResult_t st = ncclSuccess;
  ncclResult_t r;
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    if (aborted_ || !comm_) return;
    r = ncclCommGetAsyncError(comm_, &st);
  }
  if (r == ncclSuccess && st != ncclSuccess && st != ncclInProgress) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = std::string("NCCL error: ") + ncclGetErrorString(st);
  }
}

void NcclCommunicator::abort() {
  if (aborted_.exchange(true)) return;
  std::lock_guard<std::mutex> lock(call_mu_);
  cudaSetDevice(device_);
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
}

std::string NcclCommunicator::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void NcclCommunicator::all_reduce_sum(void* buf, size_t n, DType t) {
  uint64_t s = begin("all_reduce");
  check(call([&] { return ncclAllReduce(buf, buf, n, nccl_type(t), ncclSum, comm_, stream_); }),
        "ncclAllReduce");
  wait_issued("ncclAllReduce");
  end(s);
}

void NcclCommunicator::reduce_scatter_sum(const void* in, void* out, size_t n, DType t) {
  uint64_t s = begin("reduce_scatter");
  check(call([&] { return ncclReduceScatter(in, out, n, nccl_type(t), ncclSum, comm_, stream_); }),
        "ncclReduceScatter");
  wait_issued("ncclReduceScatter");
  end(s);
}

void NcclCommunicator::all_gather(const void* in, void* out, size_t n, DType t) {
  uint64_t s = begin("all_gather");
  check(call([&] { return ncclAllGather(in, out, n, nccl_type(t), comm_, stream_); }),
        "ncclAllGather");
  wait_issued("ncclAllGather");
  end(s);
}

void NcclCommunicator::broadcast(void* buf, size_t n, DType t, int root) {
  uint64_t s = begin("broadcast");
  check(call([&] { return ncclBroadcast(buf, buf, n, nccl_type(t), root, comm_, stream_); }),
        "ncclBroadcast");
  wait_issued("ncclBroadcast");
  end(s);
}

void NcclCommunicator::send(const void* buf, size_t n, DType t, int peer) {
  if (aborted_) throw suite::ToolError("the NCCL communicator was aborted");
  check(call([&] { return ncclSend(buf, n, nccl_type(t), peer, comm_, stream_); }), "ncclSend");
  wait_issued("ncclSend");
}

void NcclCommunicator::recv(void* buf, size_t n, DType t, int peer) {
  if (aborted_) throw suite::ToolError("the NCCL communicator was aborted");
  check(call([&] { return ncclRecv(buf, n, nccl_type(t), peer, comm_, stream_); }), "ncclRecv");
  wait_issued("ncclRecv");
}

void NcclCommunicator::send_recv(const std::vector<P2POp>& ops) {
  if (aborted_) throw suite::ToolError("the NCCL communicator was aborted");
  // One group: NCCL starts every transfer of it together, as batch_isend_irecv does.
  check(call([&] {
          ncclResult_t r = ncclGroupStart();
          for (const P2POp& op : ops) {
            if (r != ncclSuccess && r != ncclInProgress) break;
            r = op.send ? ncclSend(op.buf, op.n, nccl_type(op.t), op.peer, comm_, stream_)
                        : ncclRecv(op.buf, op.n, nccl_type(op.t), op.peer, comm_, stream_);
          }
          ncclResult_t e = ncclGroupEnd();
          return r == ncclSuccess || r == ncclInProgress ? e : r;
        }),
        "ncclSend/ncclRecv group");
  wait_issued("ncclSend/ncclRecv group");
}

void NcclCommunicator::synchronize() {
  int spins = 0;
  while (true) {
    if (aborted_) {
      if (watchdog_ending()) wait_for_watchdog_exit();
      throw suite::ToolError("the NCCL communicator was aborted");
    }
    cudaError_t q = cudaStreamQuery(stream_);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) cuda_check(q, "cudaStreamQuery");
    std::string broke = failure();
    if (!broke.empty()) throw suite::ToolError(broke);
    if (++spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void NcclCommunicator::host_reduce_f64(double* v, size_t n, bool max) {
  if (n > host_buf_n_) {
    if (host_buf_dev_) cudaFree(host_buf_dev_);
    host_buf_dev_ = nullptr;
    cuda_check(cudaMalloc(&host_buf_dev_, n * sizeof(double)), "cudaMalloc");
    host_buf_n_ = n;
  }
  cuda_check(cudaMemcpyAsync(host_buf_dev_, v, n * sizeof(double), cudaMemcpyHostToDevice, stream_),
             "cudaMemcpyAsync");
  uint64_t s = begin(max ? "host_all_reduce_max" : "host_all_reduce_sum");
  check(call([&] {
          return ncclAllReduce(host_buf_dev_, host_buf_dev_, n, ncclFloat64,
                               max ? ncclMax : ncclSum, comm_, stream_);
        }),
        "ncclAllReduce");
  wait_issued("ncclAllReduce");
  end(s);
  cuda_check(cudaMemcpyAsync(v, host_buf_dev_, n * sizeof(double), cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync");
  synchronize();
}

}  // namespace gpt::dist

#endif  // GPT_HAVE_NCCL
