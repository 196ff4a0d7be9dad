// The hidden-dropout mask as a pure function of (key, element index): a counter-based hash, so
// that the CPU reference and the CUDA kernels drop exactly the same elements, the backward pass
// regenerates the mask instead of storing it, and activation recompute sees the same mask.
//
// Keys: the trainer derives one key per micro-batch from (--seed, iteration, micro-batch) and the
// backend one per dropout site (embedding output, and each layer's attention and MLP outputs).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace gpt {

// splitmix64's finaliser: a bijection with full avalanche.
GPT_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Drop probability p as a 32-bit threshold: element i is dropped when its hash is below it.
inline uint32_t dropout_threshold(float p) {
  const double t = double(p) * 4294967296.0;
  return t <= 0.0 ? 0u : t >= 4294967295.0 ? 0xFFFFFFFFu : uint32_t(t);
}

GPT_HOST_DEVICE inline bool dropout_keep(uint64_t key, uint64_t i, uint32_t threshold) {
  return uint32_t(mix64(key + i * 0x9E3779B97F4A7C15ULL) >> 32) >= threshold;
}

// Key of dropout site `site` (0: embeddings; 1 + 2l: layer l's attention output; 2 + 2l: its MLP
// output) for the micro-batch key `key`.
inline uint64_t dropout_site_key(uint64_t key, uint64_t site) { return mix64(key ^ mix64(site + 1)); }

// Key of one training micro-batch.
inline uint64_t dropout_step_key(uint64_t seed, int64_t iteration, int micro_batch) {
  return mix64(mix64(seed) ^ mix64(uint64_t(iteration) * 0x100000001B3ULL + uint64_t(micro_batch)));
}

}  // namespace gpt
