#include "kernels/cuda_common.cuh"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gpt::cuda {

void check(cudaError_t status, const char* what, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw std::runtime_error(std::string("CUDA error at ") + file + ":" + std::to_string(line) +
                           ": " + what + ": " + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("cuBLAS error at ") + file + ":" + std::to_string(line) +
                           ": " + what + ": " + cublasGetStatusName(status) + " (" +
                           cublasGetStatusString(status) + ")");
}

namespace {
thread_local cudaStream_t t_stream = nullptr;
thread_local KernelConfig t_kernel_config;

struct Handle {
  cublasHandle_t h = nullptr;
  void* workspace = nullptr;
  ~Handle() {
    // At thread exit; errors there have no one to report to.
    if (h) cublasDestroy(h);
    if (workspace) cudaFree(workspace);
  }
};
thread_local Handle t_handle;

// Keep freed scratch in the pool: without this the pool returns memory at every synchronisation
// and the next step pays cudaMalloc again.
void keep_pool_memory() {
  static thread_local int done_device = -1;
  int dev = 0;
  GPT_CUDA_CHECK(cudaGetDevice(&dev));
  if (done_device == dev) return;
  cudaMemPool_t pool;
  GPT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
  uint64_t threshold = UINT64_MAX;
  GPT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  done_device = dev;
}
}  // namespace

cudaStream_t stream() { return t_stream; }
void set_stream(cudaStream_t s) { t_stream = s; }

void* cublas_workspace() {
  if (!t_handle.workspace) GPT_CUDA_CHECK(cudaMalloc(&t_handle.workspace, kCublasWorkspaceBytes));
  return t_handle.workspace;
}

cublasHandle_t cublas() {
  if (!t_handle.h) {
    GPT_CUDA_CHECK(cublasCreate(&t_handle.h));
    GPT_CUDA_CHECK(cublasSetPointerMode(t_handle.h, CUBLAS_POINTER_MODE_HOST));
  }
  GPT_CUDA_CHECK(cublasSetStream(t_handle.h, t_stream));
  // After cublasSetStream, which puts the handle back on cuBLAS's own workspace pool.
  GPT_CUDA_CHECK(cublasSetWorkspace(t_handle.h, cublas_workspace(), kCublasWorkspaceBytes));
  // CUBLAS_DEFAULT_MATH runs fp32 GEMMs in full fp32 (no TF32).
  GPT_CUDA_CHECK(cublasSetMathMode(t_handle.h, CUBLAS_DEFAULT_MATH));
  return t_handle.h;
}

const KernelConfig& kernel_config() { return t_kernel_config; }
void set_kernel_config(const KernelConfig& config) { t_kernel_config = config; }

void* scratch_alloc(size_t bytes) {
  keep_pool_memory();
  void* p = nullptr;
  GPT_CUDA_CHECK(cudaMallocAsync(&p, bytes, t_stream));
  return p;
}

void scratch_free(void* p) {
  if (p) cudaFreeAsync(p, t_stream);  // called from destructors: never throw
}

}  // namespace gpt::cuda
