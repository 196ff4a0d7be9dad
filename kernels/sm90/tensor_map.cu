#include "kernels/sm90/tensor_map.h"

#include <cudaTypedefs.h>

#include <stdexcept>
#include <string>

namespace gpt::cuda::sm90 {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// dims[0] is the innermost (columns); strides in bytes for the dimensions after the first.
CUtensorMap encode(const bf16* ptr, cuuint32_t rank, const cuuint64_t* dims,
                   const cuuint64_t* strides, const cuuint32_t* box) {
  if (!encode_tiled()) throw std::runtime_error("the CUDA driver has no cuTensorMapEncodeTiled");
  CUtensorMap map;
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank,
                                    const_cast<bf16*>(ptr), dims, strides, box, elem_strides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled failed (" + std::to_string(int(r)) +
                             ") for a bf16 tensor of " + std::to_string(dims[1]) + " rows of " +
                             std::to_string(dims[0]) + " columns");
  return map;
}

}  // namespace

bool tensor_maps_available() { return encode_tiled() != nullptr; }

CUtensorMap tensor_map(const bf16* ptr, int rows, int cols, int box_rows) {
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(cols) * sizeof(bf16)};
  const cuuint32_t box[2] = {64, cuuint32_t(box_rows)};
  return encode(ptr, 2, dims, strides, box);
}

CUtensorMap tensor_map_batched(const bf16* ptr, int batches, int rows, int cols, int box_rows) {
  const cuuint64_t dims[3] = {cuuint64_t(cols), cuuint64_t(rows), cuuint64_t(batches)};
  const cuuint64_t strides[2] = {cuuint64_t(cols) * sizeof(bf16),
                                 cuuint64_t(rows) * cols * sizeof(bf16)};
  const cuuint32_t box[3] = {64, cuuint32_t(box_rows), 1};
  return encode(ptr, 3, dims, strides, box);
}

}  // namespace gpt::cuda::sm90
