// A CUPTI injection library that records every kernel's start and end on the GPU, at the clocks the
// run really has (ncu serialises kernels and runs each alone; under the H100's 700 W cap the
// in-step clocks are lower). Loaded by the CUDA driver through CUDA_INJECTION64_PATH; it writes
// one line per kernel launched between the program's cudaProfilerStart and cudaProfilerStop
// (gpt-train --profile) to $KERNEL_TRACE_OUT (with .rankR appended when RANK is set) at exit:
//   start_ns end_ns stream_id demangled_name
// scripts/bench/trace_step.sh builds it, runs gpt-train under it and sums the lines.
#include <cupti.h>

#include <cxxabi.h>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct KernelRecord {
  uint64_t start, end;
  uint32_t stream, correlation;
  std::string name;
};

std::mutex records_mutex;
std::vector<KernelRecord> records;
// Kernels launched by API calls with correlation ids in (first, last) are in the profiled range; a
// graph launch gives all of its kernels the correlation id of its cudaGraphLaunch.
std::atomic<uint32_t> first_correlation{UINT32_MAX}, last_correlation{UINT32_MAX};

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "kernel_trace: %s: %s\n", what, msg ? msg : "unknown CUPTI error");
  std::exit(1);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kBytes = 16 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
  *size = kBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(records_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    records.push_back({k->start, k->end, k->streamId, k->correlationId, k->name ? k->name : "?"});
  }
  std::free(buffer);
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 && info->callbackSite == CUPTI_API_EXIT)
    first_correlation = info->correlationId;
  if (id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000 && info->callbackSite == CUPTI_API_ENTER)
    last_correlation = info->correlationId;
}

std::string demangled(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

void write_trace() {
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  // A rank of a distributed run (torchrun's or gpt-train --nproc-per-node's RANK) writes its own.
  const char* path = std::getenv("KERNEL_TRACE_OUT");
  const char* rank = std::getenv("RANK");
  std::string file = path ? path : "kernel_trace.txt";
  if (rank) file += std::string(".rank") + rank;
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f) {
    std::perror("kernel_trace: cannot write the trace");
    return;
  }
  std::lock_guard<std::mutex> lock(records_mutex);
  const uint32_t first = first_correlation, last = last_correlation;
  size_t kept = 0;
  for (const auto& r : records) {
    if (first == UINT32_MAX || r.correlation <= first || (last != UINT32_MAX && r.correlation >= last)) continue;
    std::fprintf(f, "%llu %llu %u %s\n", static_cast<unsigned long long>(r.start),
                 static_cast<unsigned long long>(r.end), r.stream, demangled(r.name).c_str());
    ++kept;
  }
  std::fclose(f);
  std::fprintf(stderr, "kernel_trace: %zu of %zu kernels in the profiled range\n", kept, records.size());
}

}  // namespace

extern "C" int InitializeInjection() {
  CUpti_SubscriberHandle subscriber;
  check(cuptiSubscribe(&subscriber, on_api, nullptr), "cuptiSubscribe");
  check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000), "cuptiEnableCallback");
  check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000), "cuptiEnableCallback");
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
  std::atexit(write_trace);
  return 1;
}
