// GPT_HOST_DEVICE marks the small formulas that the CPU reference and the CUDA kernels share, so
// that both backends compute them with one definition.
#pragma once

#ifdef __CUDACC__
#define GPT_HOST_DEVICE __host__ __device__
#else
#define GPT_HOST_DEVICE
#endif
