#include "kernels/sm90/capability.cuh"

#include <atomic>

#include "kernels/cuda_common.cuh"
#include "kernels/sm90/tensor_map.h"
#include "kernels/sm90/wgmma.cuh"

namespace gpt::cuda {
namespace {

// Holds a static shared array only in the sm_90a pass, so its attributes tell whether the code
// that would run on this device has the wgmma kernels (and not an empty body from another pass).
__global__ void sm90_build_probe() {
#ifdef GPT_SM90_WGMMA
  volatile __shared__ int marker[64];
  marker[threadIdx.x % 64] = int(threadIdx.x);
#endif
}

bool built_for_sm90a() {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, sm90_build_probe) != cudaSuccess) {
    (void)cudaGetLastError();  // no loadable image for this device
    return false;
  }
  return attr.sharedSizeBytes > 0;
}

}  // namespace

bool sm90_available() {
  // Asked once per device (the attention launches call this on every step that is not a graph
  // replay): 0 unknown, 1 no, 2 yes.
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (dev < kDevices && known[dev].load(std::memory_order_relaxed) != 0)
    return known[dev].load(std::memory_order_relaxed) == 2;
  int major = 0, minor = 0;
  GPT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  GPT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  const bool yes = major == 9 && minor == 0 && built_for_sm90a() &&  // the image for this device
                   sm90::tensor_maps_available();
  if (dev < kDevices) known[dev].store(yes ? 2 : 1, std::memory_order_relaxed);
  return yes;
}

}  // namespace gpt::cuda
