// The NCCL communicator on the device: one rank on one GPU (every collective is then a copy), and
// two ranks as threads when two GPUs are visible (sums, reduce-scatter + all-gather equal to
// all-reduce, completion reported to the listener, abort), and collectives captured into a CUDA
// graph, counted at each launch. Never two ranks on one GPU.
#include <doctest/doctest.h>

#ifdef GPT_HAVE_NCCL

#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/cli/error.h"
#include "train/dist/nccl_communicator.h"

using namespace gpt::dist;

namespace {

#define NCCL_TEST_CUDA(x) REQUIRE((x) == cudaSuccess)

struct Recorder : CollectiveListener {
  std::atomic<uint64_t> issued_seq{0}, completed_seq{0};
  void issued(const char*, uint64_t seq) override { issued_seq = seq; }
  void completed(uint64_t seq) override { completed_seq = seq; }
};

std::vector<float> run_rank(const std::string& id, int rank, int size, int n,
                            std::vector<float>* rsag, double* host_max, Recorder* rec) {
  NCCL_TEST_CUDA(cudaSetDevice(rank));
  cudaStream_t stream;
  NCCL_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<float> out(n), gathered(n);
  {
    NcclCommunicator comm(id, rank, size, rank, stream, 120, false);
    comm.set_listener(rec);
    std::vector<float> h(n);
    for (int k = 0; k < n; ++k) h[k] = static_cast<float>((k % 97) * 0.25 + rank * 1000.0 + 1e-3 * k);
    float *a = nullptr, *b = nullptr, *part = nullptr, *g = nullptr;
    NCCL_TEST_CUDA(cudaMalloc(&a, n * sizeof(float)));
    NCCL_TEST_CUDA(cudaMalloc(&b, n * sizeof(float)));
    NCCL_TEST_CUDA(cudaMalloc(&part, n / size * sizeof(float)));
    NCCL_TEST_CUDA(cudaMalloc(&g, n * sizeof(float)));
    NCCL_TEST_CUDA(cudaMemcpy(a, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    NCCL_TEST_CUDA(cudaMemcpy(b, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    comm.all_reduce_sum(a, n, DType::kF32);
    comm.reduce_scatter_sum(b, part, n / size, DType::kF32);
    comm.all_gather(part, g, n / size, DType::kF32);
    comm.synchronize();
    NCCL_TEST_CUDA(cudaMemcpy(out.data(), a, n * sizeof(float), cudaMemcpyDeviceToHost));
    NCCL_TEST_CUDA(cudaMemcpy(gathered.data(), g, n * sizeof(float), cudaMemcpyDeviceToHost));
    *host_max = host_all_reduce_max(comm, rank + 0.5);
    comm.poll();
    CHECK(comm.seq() == 4);
    CHECK(rec->issued_seq == 4);
    CHECK(rec->completed_seq == 4);
    CHECK(comm.failure().empty());
    comm.set_listener(nullptr);
    cudaFree(a);
    cudaFree(b);
    cudaFree(part);
    cudaFree(g);
  }
  cudaStreamDestroy(stream);
  *rsag = gathered;
  return out;
}

}  // namespace

TEST_CASE("nccl communicator: one rank, and abort") {
  MESSAGE(NcclCommunicator::version_text());
  std::string id = NcclCommunicator::make_unique_id();
  CHECK(id.size() == 128);
  std::vector<float> rsag;
  double top = 0;
  Recorder rec;
  auto out = run_rank(id, 0, 1, 1024, &rsag, &top, &rec);
  CHECK(out[5] == static_cast<float>(5 * 0.25 + 5e-3));
  CHECK(std::memcmp(out.data(), rsag.data(), out.size() * 4) == 0);
  CHECK(top == 0.5);

  NCCL_TEST_CUDA(cudaSetDevice(0));
  NcclCommunicator comm(NcclCommunicator::make_unique_id(), 0, 1, 0, nullptr, 60, false);
  comm.abort();
  float* x = nullptr;
  NCCL_TEST_CUDA(cudaMalloc(&x, 16));
  CHECK_THROWS_AS(comm.all_reduce_sum(x, 4, DType::kF32), suite::ToolError);
  cudaFree(x);
}

TEST_CASE("nccl communicator: two ranks on two GPUs") {
  int devices = 0;
  cudaGetDeviceCount(&devices);
  if (devices < 2) {
    MESSAGE("skipped: one GPU visible (two ranks on one GPU may hang in NCCL)");
    return;
  }
  std::string id = NcclCommunicator::make_unique_id();
  std::vector<float> out[2], rsag[2];
  double top[2] = {0, 0};
  Recorder rec[2];
  std::thread t1([&] { out[1] = run_rank(id, 1, 2, 4096, &rsag[1], &top[1], &rec[1]); });
  out[0] = run_rank(id, 0, 2, 4096, &rsag[0], &top[0], &rec[0]);
  t1.join();
  for (int r = 0; r < 2; ++r) {
    // Two addends: the sum does not depend on their order.
    CHECK(std::memcmp(out[r].data(), rsag[r].data(), 4096 * 4) == 0);
    CHECK(std::memcmp(out[r].data(), out[0].data(), 4096 * 4) == 0);
    CHECK(top[r] == 1.5);
  }
  float want = static_cast<float>(7 * 0.25 + 7e-3) + static_cast<float>(7 * 0.25 + 1000.0 + 7e-3);
  CHECK(out[0][7] == want);
}

TEST_CASE("nccl communicator: collectives captured into a CUDA graph are counted at each launch") {
  NCCL_TEST_CUDA(cudaSetDevice(0));
  cudaStream_t stream;
  NCCL_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Recorder rec;
  {
    NcclCommunicator comm(NcclCommunicator::make_unique_id(), 0, 1, 0, stream, 120, false);
    comm.set_listener(&rec);
    const int n = 1024;
    std::vector<float> h(n);
    for (int k = 0; k < n; ++k) h[k] = 0.5f * float(k);
    float *a = nullptr, *b = nullptr;
    NCCL_TEST_CUDA(cudaMalloc(&a, n * sizeof(float)));
    NCCL_TEST_CUDA(cudaMalloc(&b, n * sizeof(float)));
    NCCL_TEST_CUDA(cudaMemcpy(a, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    NCCL_TEST_CUDA(cudaMemset(b, 0, n * sizeof(float)));
    comm.all_reduce_sum(a, n, DType::kF32);  // eager first: the capture finds NCCL set up
    comm.synchronize();
    CHECK(comm.seq() == 1);
    // Captured: recorded by name, no sequence number until a launch.
    cudaGraph_t graph = nullptr;
    NCCL_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    comm.begin_capture();
    comm.all_reduce_sum(a, n, DType::kF32);
    comm.reduce_scatter_sum(a, b, n, DType::kF32);  // one rank: b = a
    const std::vector<std::string> names = comm.end_capture();
    NCCL_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK(names == std::vector<std::string>{"all_reduce", "reduce_scatter"});
    CHECK(comm.seq() == 1);
    CHECK(rec.issued_seq == 1);
    cudaGraphExec_t exec = nullptr;
    NCCL_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    cudaGraphDestroy(graph);
    for (int launch = 0; launch < 2; ++launch) {
      NCCL_TEST_CUDA(cudaGraphLaunch(exec, stream));
      comm.issue_captured(names, stream);
    }
    CHECK(comm.seq() == 5);
    CHECK(rec.issued_seq == 5);
    comm.synchronize();
    comm.poll();  // the watchdog's call: the event after the last launch has completed
    CHECK(rec.completed_seq == 5);
    CHECK(comm.failure().empty());
    std::vector<float> out(n);
    NCCL_TEST_CUDA(cudaMemcpy(out.data(), b, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(out == h);
    // Eager again after the graph: the next number.
    comm.all_reduce_sum(a, n, DType::kF32);
    comm.synchronize();
    CHECK(comm.seq() == 6);
    cudaGraphExecDestroy(exec);
    comm.set_listener(nullptr);
    cudaFree(a);
    cudaFree(b);
  }
  cudaStreamDestroy(stream);
}

#endif  // GPT_HAVE_NCCL
