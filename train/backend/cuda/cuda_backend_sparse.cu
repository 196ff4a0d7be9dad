// The distributed optimizer's sharded fp32 master weights on the CUDA backend
// (BackendOptions::shard_master, --bf16): params_ keeps its flat layout, so that every kernel
// indexes it as before, but device memory is mapped (CUDA virtual memory management) only under
// the pages this rank's fp32 values live in: its owned ranges (AdamW's shard), the padding, and
// the tensors the bf16 compute reads in fp32 (embeddings, LayerNorms, biases). The layers' matmul
// weights, nearly all of a GPT's parameters, exist in fp32 only in their owners' pieces; the
// compute reads them from the bf16 copy, which the all-gather after AdamW fills
// (params_from_staging).
//
// Split masters (CudaBackend::split_master_, --bf16 without the distributed optimizer) map the
// same pages but the owned ranges: there every matmul weight's master is its bf16 copy plus a low
// half, and set_params_split / get_params_split move the parameters in and out.
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "kernels/kernels.cuh"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/tool_error.h"

namespace gpt {
namespace {

// The driver's virtual memory functions, through the runtime (no link against libcuda).
struct Vmm {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) access = nullptr;
};

// The driver's virtual memory functions, or the name of the first one it lacks.
struct VmmOrMissing {
  Vmm f;
  std::string missing;
};

const VmmOrMissing& vmm_or_missing() {
  static const VmmOrMissing v = [] {
    VmmOrMissing r;
    auto get = [&](const char* name, auto& fn) {
      if (!r.missing.empty()) return;
      void* p = nullptr;
      cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
      const cudaError_t rc = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault,
                                                              &found);
#else
      const cudaError_t rc = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &found);
#endif
      if (rc != cudaSuccess || found != cudaDriverEntryPointSuccess || !p) {
        (void)cudaGetLastError();
        r.missing = name;
        return;
      }
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    get("cuMemGetAllocationGranularity", r.f.granularity);
    get("cuMemAddressReserve", r.f.reserve);
    get("cuMemAddressFree", r.f.free);
    get("cuMemCreate", r.f.create);
    get("cuMemRelease", r.f.release);
    get("cuMemMap", r.f.map);
    get("cuMemUnmap", r.f.unmap);
    get("cuMemSetAccess", r.f.access);
    return r;
  }();
  return v;
}

const Vmm& vmm() {
  const VmmOrMissing& v = vmm_or_missing();
  if (!v.missing.empty())
    throw suite::ToolError("cuda backend: the driver has no " + v.missing +
                           " (needed by the distributed optimizer's sharded weights)");
  return v.f;
}

void check(CUresult rc, const char* what) {
  if (rc == CUDA_ERROR_OUT_OF_MEMORY)
    throw suite::ToolError(std::string("cuda backend: out of device memory for the sharded "
                                       "fp32 weights (") + what + ")");
  if (rc != CUDA_SUCCESS)
    throw suite::ToolError(std::string("cuda backend: ") + what + " failed (CUresult " +
                           std::to_string(int(rc)) + ")");
}

// Rank q's chunk of the staging into the bf16 copy, and into params_ where its page is mapped.
__global__ void from_staging_kernel(const float* staging, int D, size_t m, size_t begin,
                                    size_t stride, size_t total, float* params,
                                    cuda::bf16* params_h, const unsigned char* page_mapped,
                                    size_t page_elements) {
  const size_t n = size_t(D) * m;
  for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < n;
       k += size_t(gridDim.x) * blockDim.x) {
    const size_t q = k / m, i = k % m, at = begin + q * stride + i;
    if (at >= total) continue;
    const float v = staging[k];
    params_h[at] = __float2bfloat16_rn(v);  // as cuda::to_bf16 and AdamW round
    if (page_mapped[at / page_elements]) params[at] = v;
  }
}

}  // namespace

bool CudaBackend::can_map_sparse() { return vmm_or_missing().missing.empty(); }

CudaBackend::SparseParams::~SparseParams() {
  if (!base) return;
  const Vmm& f = vmm();
  const auto at = reinterpret_cast<CUdeviceptr>(base);
  for (const Map& m : maps) {
    f.unmap(at + m.offset, m.size);
    f.release(m.handle);
  }
  f.free(at, reserved);
}

void* CudaBackend::map_sparse_params(size_t bytes) {
  const Vmm& f = vmm();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  size_t page = 0;
  check(f.granularity(&page, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  if (page % sizeof(float) != 0) throw std::logic_error("odd allocation granularity");
  const size_t page_elements = page / sizeof(float);
  const size_t flat = layout_.total() + flat_padding_;
  const size_t pages = (flat + page_elements - 1) / page_elements;
  // The pages to map: the owned ranges, the padding, and every tensor but the matmul weights.
  std::vector<unsigned char> wanted(pages, 0);
  auto want = [&](size_t lo, size_t hi) {
    if (lo >= hi) return;
    for (size_t p = lo / page_elements; p <= (hi - 1) / page_elements; ++p) wanted[p] = 1;
  };
  if (!split_master_)
    for (const auto& [lo, hi] : shard_.ranges()) want(lo, hi);
  want(layout_.total(), flat);
  for (const auto& [lo, hi] : fp32_read_tensors(layout_)) want(lo, hi);
  sparse_.page = page;
  sparse_.reserved = pages * page;
  CUdeviceptr base = 0;
  check(f.reserve(&base, sparse_.reserved, page, 0, 0), "cuMemAddressReserve");
  sparse_.base = reinterpret_cast<void*>(base);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (size_t p = 0; p < pages;) {
    if (!wanted[p]) {
      ++p;
      continue;
    }
    size_t q = p;
    while (q < pages && wanted[q]) ++q;
    const size_t offset = p * page, size = (q - p) * page;
    CUmemGenericAllocationHandle handle = 0;
    check(f.create(&handle, size, &prop, 0), "cuMemCreate");
    if (const CUresult rc = f.map(base + offset, size, 0, handle, 0); rc != CUDA_SUCCESS) {
      f.release(handle);
      check(rc, "cuMemMap");
    }
    sparse_.maps.push_back({offset, size, handle});
    sparse_.runs.push_back({p * page_elements, std::min(q * page_elements, flat)});
    check(f.access(base + offset, size, &access, 1), "cuMemSetAccess");
    GPT_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(sparse_.base) + offset, 0, size, stream_));
    allocated_bytes_ += size;
    p = q;
  }
  void* map = nullptr;
  GPT_CUDA_CHECK(cudaMalloc(&map, pages));
  allocations_.push_back(map);
  allocated_bytes_ += pages;
  GPT_CUDA_CHECK(cudaMemcpy(map, wanted.data(), pages, cudaMemcpyHostToDevice));
  sparse_.page_mapped = static_cast<unsigned char*>(map);
  (void)bytes;
  return sparse_.base;
}

void CudaBackend::refresh_sparse_half() {
  // Defined contents before the first set_params: zeros, and the mapped fp32 values.
  GPT_CUDA_CHECK(cudaMemsetAsync(params_h_, 0, layout_.total() * sizeof(cuda::bf16), stream_));
  for (const auto& [lo, hi0] : sparse_.runs) {
    const size_t hi = std::min(hi0, layout_.total());
    if (lo < hi) cuda::to_bf16(params_h_ + lo, params_ + lo, hi - lo);
  }
}

namespace {

// The host's parameters [0, total) chunk by chunk through a device scratch, in stream order:
// place(buf, c0, n) puts chunk [c0, c0 + n) where it belongs; the host buffer is free on return.
template <class Place>
void upload_chunks(const float* host, size_t total, cudaStream_t stream, Place&& place) {
  const size_t chunk = std::min<size_t>(total, size_t(1) << 22);
  cuda::Scratch<float> buf(chunk);
  for (size_t c0 = 0; c0 < total; c0 += chunk) {
    const size_t n = std::min(chunk, total - c0);
    GPT_CUDA_CHECK(cudaMemcpyAsync(buf, host + c0, n * sizeof(float), cudaMemcpyHostToDevice,
                                   stream));
    place(buf.get(), c0, n);
  }
  GPT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

void CudaBackend::set_params_sparse(const float* host) {
  cuda_tool_error([&] {
    Enter scope(*this);
    // The bf16 copy of everything, fp32 where mapped.
    upload_chunks(host, layout_.total(), stream_, [&](const float* buf, size_t c0, size_t n) {
      cuda::to_bf16(params_h_ + c0, buf, n);
      for (const auto& [lo, hi] : sparse_.runs) {
        const size_t a = std::max(lo, c0), b = std::min(hi, c0 + n);
        if (a < b)
          GPT_CUDA_CHECK(cudaMemcpyAsync(params_ + a, buf + (a - c0), (b - a) * sizeof(float),
                                         cudaMemcpyDeviceToDevice, stream_));
      }
    });
    return 0;
  });
}

void CudaBackend::set_params_split(const float* host) {
  cuda_tool_error([&] {
    Enter scope(*this);
    // The split tensors into their halves, the others into params_ and their bf16 copy.
    upload_chunks(host, layout_.total(), stream_, [&](const float* buf, size_t c0, size_t n) {
      for (size_t k = 0; k < split_ranges_.size(); ++k) {
        const auto [lo, hi] = split_ranges_[k];
        const size_t a = std::max(lo, c0), b = std::min(hi, c0 + n);
        if (a < b)
          cuda::split_master(params_h_ + a, params_lo_ + (a + lo_shifts_[k]), buf + (a - c0),
                             b - a);
      }
      for (const auto& [lo, hi] : fp32_ranges_) {
        const size_t a = std::max(lo, c0), b = std::min(hi, c0 + n);
        if (a >= b) continue;
        GPT_CUDA_CHECK(cudaMemcpyAsync(params_ + a, buf + (a - c0), (b - a) * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream_));
        cuda::to_bf16(params_h_ + a, buf + (a - c0), b - a);
      }
    });
    return 0;
  });
}

void CudaBackend::get_params_split(float* host) const {
  // Each split tensor joined from its halves, chunk by chunk; the others from params_.
  const size_t chunk = size_t(1) << 22;
  cuda::Scratch<float> buf(chunk);
  for (size_t k = 0; k < split_ranges_.size(); ++k) {
    const auto [lo, hi] = split_ranges_[k];
    for (size_t a = lo; a < hi; a += chunk) {
      const size_t n = std::min(chunk, hi - a);
      cuda::join_master(buf, params_h_ + a, params_lo_ + (a + lo_shifts_[k]), n);
      GPT_CUDA_CHECK(cudaMemcpyAsync(host + a, buf, n * sizeof(float), cudaMemcpyDeviceToHost,
                                     stream_));
      GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
  }
  for (const auto& [lo, hi] : fp32_ranges_)
    GPT_CUDA_CHECK(cudaMemcpyAsync(host + lo, params_ + lo, (hi - lo) * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream_));
  GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::get_params_sparse(float* host) const {
  if (full_params_) return full_params_(host);  // every rank's fp32 pieces
  // Without the ranks (a backend on its own): the bf16 copy, widened, and the fp32 values kept.
  const size_t total = layout_.total();
  std::vector<cuda::bf16> half(total);
  GPT_CUDA_CHECK(cudaMemcpyAsync(half.data(), params_h_, total * sizeof(cuda::bf16),
                                 cudaMemcpyDeviceToHost, stream_));
  GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (size_t i = 0; i < total; ++i) host[i] = __bfloat162float(half[i]);
  for (const auto& [lo, hi0] : sparse_.runs) {
    const size_t hi = std::min(hi0, total);
    if (lo < hi)
      GPT_CUDA_CHECK(cudaMemcpyAsync(host + lo, params_ + lo, (hi - lo) * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_));
  }
  GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

float* CudaBackend::gather_staging(size_t n) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    if (dp_staging_capacity_ < n) {
      void* p = nullptr;
      if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess)
        throw suite::ToolError("cuda backend: out of device memory for the parameter gather's "
                               "staging (" + std::to_string((n * sizeof(float)) >> 20) + " MiB)");
      allocations_.push_back(p);
      allocated_bytes_ += n * sizeof(float);
      dp_staging_ = static_cast<float*>(p);
      dp_staging_capacity_ = n;
    }
    return dp_staging_;
  });
}

void CudaBackend::params_from_staging(const float* staging, int D, size_t m, size_t begin,
                                      size_t stride, bool on_comm) {
  if (!sparse_.base) throw std::logic_error("params_from_staging without sharded weights");
  cuda_tool_error([&] {
    Enter scope(*this);
    const cudaStream_t s = on_comm && comm_.stream ? comm_.stream : stream_;
    const size_t n = size_t(D) * m;
    const int threads = 256;
    const int blocks = int(std::min<size_t>((n + threads - 1) / threads, 65536));
    from_staging_kernel<<<blocks, threads, 0, s>>>(staging, D, m, begin, stride, layout_.total(),
                                                   params_, params_h_, sparse_.page_mapped,
                                                   sparse_.page / sizeof(float));
    GPT_CUDA_CHECK(cudaGetLastError());
    return 0;
  });
}

void CudaBackend::read_staging(float* host, const float* staging, size_t n) {
  cuda_tool_error([&] {
    Enter scope(*this);
    GPT_CUDA_CHECK(cudaMemcpyAsync(host, staging, n * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream_));
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return 0;
  });
}

}  // namespace gpt
