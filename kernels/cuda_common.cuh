// Shared plumbing of the CUDA kernels (namespace gpt::cuda): error checks, the current stream,
// the cuBLAS handle, stream-ordered scratch memory and small device helpers.
//
// Execution model (the contract of every kernel in kernels/):
//   - Every function queues its work on gpt::cuda::stream() and returns without a host sync,
//     except where it returns a host value (sum_squares). Pointers are device pointers.
//   - Temporary buffers come from the stream-ordered allocator (cudaMallocAsync on stream()),
//     whose pool keeps its memory (release threshold raised once), so steady-state steps neither
//     call cudaMalloc nor synchronise.
//   - Results are deterministic: no floating-point atomics; every reduction has a fixed order
//     that depends only on the problem shape (not on timing or on the number of SMs).
//   - cuBLAS runs fp32 GEMMs with fp32 arithmetic (no TF32): the fp32 path is the test oracle.
//   - Where there is a choice of kernel, the calling thread's KernelConfig decides
//     (kernel_config(), set like the stream by whoever drives the kernels).
//
// This header is plain C++ on the host side, so .cpp files (tests, the backend) may include it.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/kernel_config.h"

namespace gpt::cuda {

using bf16 = __nv_bfloat16;
using fp16 = __half;  // --fp16: the matmul inputs (loss-scaled gradients overflow to inf)

// Throws std::runtime_error naming the call site when status is an error.
void check(cudaError_t status, const char* what, const char* file, int line);
void check(cublasStatus_t status, const char* what, const char* file, int line);

#define GPT_CUDA_CHECK(call) ::gpt::cuda::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports bad launch configurations at once (not at the next sync).
#define GPT_CUDA_CHECK_LAUNCH() ::gpt::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

// The stream every kernel and cuBLAS call is queued on (per host thread; default: the legacy
// default stream 0).
cudaStream_t stream();
void set_stream(cudaStream_t s);

// The calling thread's cuBLAS handle, bound to stream() on each call.
cublasHandle_t cublas();
// The calling thread's cuBLAS / cuBLASLt workspace (kCublasWorkspaceBytes, allocated once: the
// 32 MiB NVIDIA advises for Hopper). A fixed workspace keeps GEMMs free of allocations, so a
// step can be captured in a CUDA graph. GEMMs share it: they run in stream order.
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;
void* cublas_workspace();

// The kernel choices in force on the calling thread (default: KernelConfig{}).
const KernelConfig& kernel_config();
void set_kernel_config(const KernelConfig& config);

// Stream-ordered device scratch: allocated on stream(), freed on stream() when it goes out of
// scope, so work already queued that reads it stays valid.
void* scratch_alloc(size_t bytes);
void scratch_free(void* p);

template <class T>
class Scratch {
 public:
  explicit Scratch(size_t n) : p_(static_cast<T*>(scratch_alloc(n * sizeof(T) + (n == 0)))) {}
  ~Scratch() { scratch_free(p_); }
  Scratch(Scratch&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }  // ownership moves, e.g. to a queue
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return p_; }
  operator T*() const { return p_; }

 private:
  T* p_;
};

inline unsigned ceil_div(size_t a, size_t b) { return static_cast<unsigned>((a + b - 1) / b); }

// Blocks for a grid-stride loop over n items, per_block of them a block and pass: at most 65536
// (the loop covers the rest).
inline unsigned grid_stride_blocks(size_t n, size_t per_block = 256) {
  const size_t blocks = (n + per_block - 1) / per_block;
  return unsigned(blocks < 65536 ? blocks : 65536);
}

#ifdef __CUDACC__
// 2^x on the special-function unit (ex2.approx.ftz: about 2 ulp; ex2(-inf) = 0). Softmax kernels
// scale their inputs by log2(e) and use this instead of expf.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Four bf16 values at p (8-byte aligned) as fp32, in one 8-byte load.
__device__ __forceinline__ float4 load_bf16x4(const bf16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}

// Warp-level sum in a fixed butterfly order (deterministic).
template <class T>
__device__ inline T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide sum (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `shared` holds 32 T. Fixed order: warp butterflies, then warp 0 over the warp partials.
template <class T>
__device__ inline T block_sum(T v, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // shared may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T r = lane < warps ? shared[lane] : T(0);
  r = warp_sum(r);
  return r;
}
__device__ inline float block_max(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float r = lane < warps ? shared[lane] : -INFINITY;
  return warp_max(r);
}

template <class Op>
__global__ void each_index_kernel(Op op, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    op(i);
}
// Queues op(i) for every i in [0, n) on stream(): op is a functor with a __device__ operator().
template <class Op>
void for_each_index(size_t n, Op op) {
  if (n == 0) return;
  each_index_kernel<<<grid_stride_blocks(n), 256, 0, stream()>>>(op, n);
  GPT_CUDA_CHECK_LAUNCH();
}
#endif

}  // namespace gpt::cuda
