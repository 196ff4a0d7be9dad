// Hopper bulk tensor copies (TMA) completing on shared-memory barriers (mbarrier), the
// producer/consumer pipeline of gemm_sm90.cu, and bulk tensor stores of its outputs; plain bulk
// stores and additions of shared-memory buffers (the dQ tiles of flash_backward_wide_sm90.cuh). Device code for sm_90 and later only; the callers
// compile it under GPT_SM90_WGMMA (wgmma.cuh).
//
// A barrier's phase completes when its expected arrivals (the count given at init) have arrived
// and, for a copy barrier, its expected transaction bytes have landed. wait(bar, parity) returns
// once the phase of that parity has completed: consumers wait on "full" with parity 0, 1, 0, ...
// per pass over the stages; producers wait on "empty" with the opposite parity, so their first
// pass does not wait.
#pragma once

#include <cstdint>

namespace gpt::cuda::tma {

__device__ __forceinline__ void bar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the copy engine (then a __syncthreads).
__device__ __forceinline__ void bar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void bar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival that also expects `bytes` of copies to complete on this barrier.
__device__ __forceinline__ void bar_arrive_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// One arrival on the barrier at offset bar in CTA `cta` of this cluster (this one included), with
// the default CTA-scope release: .release.cluster made every arrival slow enough to cost the GEMM
// a third of its rate, and the arrivals only order the consumers' reads of a stage (finished by
// their wgmma waits) before the next copy into it.
__device__ __forceinline__ void bar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
// This CTA's rank in its cluster, and a barrier over every thread of the cluster (after which
// each CTA's initialised barriers may be used by the others).
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void bar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// The box at coordinates (c0 innermost, c1) of a 2-D tensor map into shared memory at dst
// (1024-byte aligned for the 128-byte swizzle), counted on barrier bar.
__device__ __forceinline__ void load_2d(uint32_t dst, const void* map, int c0, int c1,
                                        uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// As load_2d, into the same shared-memory offset of every CTA of the cluster in cta_mask, each
// counting the bytes on its own barrier at offset bar.
__device__ __forceinline__ void load_2d_multicast(uint32_t dst, const void* map, int c0, int c1,
                                                  uint32_t bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}

// The box at coordinates (c0 innermost, c1, c2) of a 3-D tensor map, as load_2d.
__device__ __forceinline__ void load_3d(uint32_t dst, const void* map, int c0, int c1, int c2,
                                        uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// Shared memory at src (written by this CTA, then fence.proxy.async and a barrier) to the box at
// (c0, c1) of a 2-D tensor map; stores issued by one thread, grouped by store_commit.
__device__ __forceinline__ void store_2d(const void* map, int c0, int c1, uint32_t src) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(c0), "r"(c1), "r"(src)
      : "memory");
}
__device__ __forceinline__ void store_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// The committed stores have read their shared memory (it may be overwritten).
__device__ __forceinline__ void store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// All but the newest N committed groups of stores are complete (their global writes done).
template <int N>
__device__ __forceinline__ void store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// The committed stores are complete (before the CTA exits).
__device__ __forceinline__ void store_wait_all() { store_wait<0>(); }

// `bytes` (a multiple of 16) of shared memory at src to global memory at dst, stored (store_1d)
// or added element by element as fp32 (add_1d, each element one atomic addition); issued by one
// thread, grouped by store_commit.
__device__ __forceinline__ void store_1d(float* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
               "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void add_1d(float* dst, uint32_t src, uint32_t bytes) {
  asm volatile(
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst),
      "r"(src), "r"(bytes)
      : "memory");
}
// Orders this thread's generic-proxy accesses to global memory with its bulk (async-proxy) ones.
__device__ __forceinline__ void fence_proxy_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void set_max_registers_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void set_max_registers_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

}  // namespace gpt::cuda::tma
