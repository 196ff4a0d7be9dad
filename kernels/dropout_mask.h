// The dropout masks as pure functions of (key, element index): counter-based hashes, so
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

// hash32 from x ^ (x >> 16) on: the attention kernels fold that first step into a tile's
// common part.
GPT_HOST_DEVICE inline uint32_t hash32_rest(uint32_t x) {
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// A 32-bit bijection with low bias (two multiply-xorshift rounds; constants of Chris Wellons'
// hash-prospector "lowbias32").
GPT_HOST_DEVICE inline uint32_t hash32(uint32_t x) { return hash32_rest(x ^ x >> 16); }

// The two 32-bit hashes of counter c under the halves of key, as a word's high and low halves:
// the dropout masks' words. Their four 32-bit products cost the flash kernels' busiest pipe (the
// one the softmax's multiply-adds share) about half of mix64's two 64-bit products.
GPT_HOST_DEVICE inline uint64_t hash_word(uint32_t c, uint64_t key) {
  return uint64_t(hash32(c ^ uint32_t(key >> 32))) << 32 | hash32(c ^ uint32_t(key));
}

// Drop probability p as a 16-bit threshold (rounded: the drop rate is within 2^-17 of p); the
// scale stays 1/(1 - p).
inline uint32_t dropout_threshold(float p) {
  const double t = double(p) * 65536.0 + 0.5;
  return t <= 0.0 ? 0u : t >= 65535.0 ? 0xFFFFu : uint32_t(t);
}

// 2^64 / golden ratio (odd): the step between the heads' keys (attention_head_key).
constexpr uint64_t kDropoutStride = 0x9E3779B97F4A7C15ULL;

// Whether lane `lane` (0..3) of a mask word, bits 16·lane .. 16·lane + 15, reaches the 16-bit
// threshold. An upper lane compares its whole 32-bit half with threshold·65536 (the same order,
// one comparison).
GPT_HOST_DEVICE inline bool lane_keep(uint64_t word, int lane, uint32_t threshold) {
  const uint32_t half = uint32_t(word >> (32 * (lane >> 1)));
  return lane & 1 ? half >= threshold << 16 : (half & 0xFFFFu) >= threshold;
}

// ---- Hidden dropout: one word for four consecutive elements ----
// Element i is lane i % 4 of hash_word(i / 4, key) (i < 2^34): a hash per element cost the fused
// passes (a LayerNorm's rows) more than their memory traffic; the 16-byte groups of those passes
// take one word each.
GPT_HOST_DEVICE inline uint64_t dropout_word(uint64_t key, uint64_t i) {
  return hash_word(uint32_t(i >> 2), key);
}
GPT_HOST_DEVICE inline bool dropout_keep(uint64_t key, uint64_t i, uint32_t threshold) {
  return lane_keep(dropout_word(key, i), int(i & 3), threshold);
}

// Key of dropout site `site` (0: embeddings; 1 + 2l: layer l's attention output; 2 + 2l: its MLP
// output) for the micro-batch key `key`.
GPT_HOST_DEVICE inline uint64_t dropout_site_key(uint64_t key, uint64_t site) {
  return mix64(key ^ mix64(site + 1));
}

// The site of layer `layer`'s attention dropout (on the softmax probabilities): from 2^32 up,
// which hidden dropout (sites 0 .. 2·layers) never reaches; the mask under it is attention_keep's.
GPT_HOST_DEVICE inline uint64_t attention_dropout_site(int layer) {
  return (uint64_t(1) << 32) + uint64_t(layer);
}

// A dropout key as a kernel takes it: its value, or (in a CUDA graph, whose kernel arguments are
// fixed when it is captured) site `site` of the micro-batch key that `micro_batch` points at in
// device memory, written in stream order before each replay. Kernels read it once (get()).
struct DropKey {
  uint64_t value = 0;
  const uint64_t* micro_batch = nullptr;
  uint64_t site = 0;

  GPT_HOST_DEVICE DropKey(uint64_t key = 0) : value(key) {}
  static DropKey on_device(const uint64_t* micro_batch, uint64_t site) {
    DropKey k;
    k.micro_batch = micro_batch;
    k.site = site;
    return k;
  }
  GPT_HOST_DEVICE uint64_t get() const {
#ifdef __CUDA_ARCH__
    if (micro_batch) return dropout_site_key(*micro_batch, site);
#endif
    return value;
  }
};

// One hidden-dropout site as a kernel applies it on the way through another pass (the LayerNorm
// that adds the branch to the residual stream, and its backward): element i of the branch keeps
// v / (1 - p) or becomes 0, as dropout_backward's kernels have it. The default drops nothing.
// A kernel calls resolved() once before the elements, which read the key's value.
struct HiddenDropout {
  bool on = false;
  uint32_t threshold = 0;
  float scale = 1.0f;
  DropKey key;

  static HiddenDropout at(float p, DropKey key) {
    return p > 0.0f ? HiddenDropout{true, dropout_threshold(p), 1.0f / (1.0f - p), key}
                    : HiddenDropout{};
  }
  // The same site with its key read (from device memory under CUDA graphs) into key.value.
  GPT_HOST_DEVICE HiddenDropout resolved() const {
    HiddenDropout d = *this;
    if (on) d.key = DropKey(key.get());
    return d;
  }
  GPT_HOST_DEVICE float operator()(float v, uint64_t i) const {
    return dropout_keep(key.value, i, threshold) ? v * scale : 0.0f;
  }
#ifdef __CUDACC__
  // Elements i .. i + 3 (i % 4 == 0) from their one word.
  __device__ float4 operator()(float4 v, uint64_t i) const {
    const uint64_t w = dropout_word(key.value, i);
    return make_float4(lane_keep(w, 0, threshold) ? v.x * scale : 0.0f,
                       lane_keep(w, 1, threshold) ? v.y * scale : 0.0f,
                       lane_keep(w, 2, threshold) ? v.z * scale : 0.0f,
                       lane_keep(w, 3, threshold) ? v.w * scale : 0.0f);
  }
#endif
};

// ---- Attention dropout: one word of two 32-bit hashes for four probabilities ----
// The flash kernels meet every element of a head's [T,T] probabilities three times (forward, dQ,
// dK/dV), so the hash per element dominated their cost. One 64-bit word serves the group of four
// elements (i, j), (i, j+8), (i+8, j), (i+8, j+8) with bit 3 of i and j clear: exactly the four
// an m16n8k16 accumulator thread holds of a 16×16 block (rows g, g+8 of its m-tile, the same
// column of two adjacent n-tiles), whether the tile is S = Q·Kᵀ (forward, dQ) or its transpose
// (dK/dV); each element compares a 16-bit lane of the word with the 16-bit threshold (lane_keep).
// The word is hash_word of the group's counter under a key of the head.
//
// Element (i, j) of head bh = b·NH + h is lane 2·bit3(i) + bit3(j) (bits 16·lane ..) of the word
// of its group (i0, j0) = (i & ~8, j & ~8): hash_word(i0·65536 + j0, head key), the head key
// mix64(key + bh·kDropoutStride) of the site's key (T ≤ 65536).

constexpr uint32_t kAttentionMaxT = 65536;  // the counter's i0 and j0 take 16 bits each

// The groups along row i0 of a head (SHIFT 0: the column v varies) or along column j0 (SHIFT 16:
// the row v varies): the group at v (bit 3 clear) hashes a ^ v << SHIFT into its word's high
// half and b ^ v << SHIFT into its low half (its counter xored with the head key's halves).
template <int SHIFT>
struct AttentionLine {
  uint32_t a = 0, b = 0;

  GPT_HOST_DEVICE uint64_t word(uint32_t v) const {
    return uint64_t(hash32(a ^ v << SHIFT)) << 32 | hash32(b ^ v << SHIFT);
  }
};
using AttentionRow = AttentionLine<0>;
using AttentionColumn = AttentionLine<16>;

// The head's key: kA << 32 | kB.
GPT_HOST_DEVICE inline uint64_t attention_head_key(uint64_t key, uint64_t bh) {
  return mix64(key + bh * kDropoutStride);
}

// Row i (bit 3 clear) of head bh's probabilities under key `key`.
GPT_HOST_DEVICE inline AttentionRow attention_row(uint64_t key, uint64_t bh, uint32_t i) {
  const uint64_t k = attention_head_key(key, bh);
  return {(i << 16) ^ uint32_t(k >> 32), (i << 16) ^ uint32_t(k)};
}

// Column j (bit 3 clear) of the same.
GPT_HOST_DEVICE inline AttentionColumn attention_column(uint64_t key, uint64_t bh, uint32_t j) {
  const uint64_t k = attention_head_key(key, bh);
  return {j ^ uint32_t(k >> 32), j ^ uint32_t(k)};
}

// The keep bit of element (i, j) of head bh's probabilities (the definition above).
GPT_HOST_DEVICE inline bool attention_keep(uint64_t key, uint64_t bh, uint32_t i, uint32_t j,
                                           uint32_t threshold) {
  const uint64_t word = attention_row(key, bh, i & ~8u).word(j & ~8u);
  return lane_keep(word, int(2 * ((i >> 3) & 1) + ((j >> 3) & 1)), threshold);
}

// The heads a call holds of the model's: heads first .. first + NH - 1 of each sample's `total`
// (a tensor-parallel rank's), so that attention dropout hashes the model's head index and a rank
// drops what a one-GPU run drops. The default (total 0): the call's heads are the model's.
struct HeadRange {
  uint32_t total = 0, first = 0;
  // Tensor-parallel rank `rank` of `tp` over a model of `heads` heads (split evenly, Megatron's).
  static HeadRange of_rank(int heads, int tp, int rank) {
    return tp == 1 ? HeadRange{} : HeadRange{uint32_t(heads), uint32_t(rank * (heads / tp))};
  }
  // The model's b·total + h of the call's head bh = b·NH + h.
  GPT_HOST_DEVICE uint64_t model_bh(uint64_t bh, uint32_t NH) const {
    return total ? bh / NH * total + first + bh % NH : bh;
  }
};

// Key of layer `layer`'s attention dropout for the micro-batch key `key`.
inline uint64_t attention_dropout_key(uint64_t key, int layer) {
  return dropout_site_key(key, attention_dropout_site(layer));
}

// Key of one training micro-batch.
inline uint64_t dropout_step_key(uint64_t seed, int64_t iteration, int micro_batch) {
  return mix64(mix64(seed) ^ mix64(uint64_t(iteration) * 0x100000001B3ULL + uint64_t(micro_batch)));
}

}  // namespace gpt
