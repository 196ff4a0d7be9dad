// The forward matrix products of the bf16 path on Hopper (sm_90a) with the epilogues fused:
//   out [M, N] = A [M, K] · B [N, K]ᵀ + bias (or GELU of that, the pre-activation kept),
// A and B bf16 row-major (K contiguous: the activations and a weight as stored), fp32 accumulation;
// or out = A · B with B [K, N] (the input gradients: dout · weight), optionally with the GELU
// backward fused (the MLP's fc: dx = gelu'(pre) · dH, the recomputed GELU output and the fc bias
// gradient's partial column sums written from the same tile).
// A persistent, warp-specialised kernel: one warp feeds a four-stage pipeline of 128×64 and
// 256×64 tiles through the copy engine (TMA), two warpgroups multiply them with wgmma
// m64n256k16, add the bias (and GELU) to their 64×256 halves of the output tile, stage them in
// shared memory and leave the stores to the copy engine while they go on with the next tile.
// Where the tile rows pair up, CTA pairs (clusters of two) take vertically adjacent tiles and each
// loads half of their common B tile into both (TMA multicast).
// Each output element is summed by one thread in a fixed k order: results are deterministic.
// matmul.cu uses it where it applies and cuBLASLt elsewhere.
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

enum class Sm90Epilogue {
  kBf16,      // out = A·Bᵀ + bias (optional)
  kBf16Gelu,  // pre = A·Bᵀ + bias; out = GELU(the fp32 pre-activation), gelu.cu's tanh form
  // The GELU backward on dH = bf16(A·B) (B [K, N]): out = bf16(gelu'(gelu_pre) · dH),
  // gelu_out = bf16(gelu(gelu_pre)) (unless gelu_out is null); dbias_partial (if not null)
  // [M/64, N] = the column sums of the stored out over each 64-row chunk, in
  // gelu_backward_bf16_bias's order (gelu.cu), for column_sum_finish. tanh.approx, as in
  // kBf16Gelu.
  kBf16DGelu,
};

struct Sm90Gemm {
  int M = 0, N = 0, K = 0;
  const bf16* a = nullptr;     // [M, K]
  const bf16* b = nullptr;     // [N, K], or [K, N] with b_kn
  const bf16* bias = nullptr;  // [N] or null
  bf16* out = nullptr;         // [M, N]
  bf16* pre = nullptr;         // [M, N], kBf16Gelu
  bool b_kn = false;           // B stored [K, N] (a weight in the input-gradient products)
  const bf16* gelu_pre = nullptr;  // [M, N], kBf16DGelu: the forward's pre-activation
  bf16* gelu_out = nullptr;        // [M, N], kBf16DGelu: GELU(gelu_pre), or null (not written)
  float* dbias_partial = nullptr;  // [M / 64, N], kBf16DGelu
};

// Whether the kernel takes this shape on the current device: an sm_90a build on compute
// capability 9.0, M % 128 == 0, N % 256 == 0, K % 64 == 0, and enough 128×256 output tiles to
// keep the SMs busy in the last round (>= 90%).
bool gemm_sm90_applies(int M, int N, int K);
// Queues the product on stream(); false (nothing queued) when it does not apply, is not in use
// for this epilogue (KernelConfig::sm90_gemm), or a pointer is not 16-byte aligned.
bool gemm_sm90(const Sm90Gemm& g, Sm90Epilogue epilogue);

}  // namespace gpt::cuda
