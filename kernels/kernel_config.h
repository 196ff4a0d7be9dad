// Which kernel the CUDA path takes where there is a choice: plain data, filled from gpt-train's
// flags (train/loop/options.cpp) and handed to the CUDA backend in BackendOptions, which makes it
// the kernels' configuration (gpt::cuda::set_kernel_config) while it runs. The defaults are the
// fastest choices that keep every run bit-identical to the last.
#pragma once

#include "kernels/flash_tiles.h"

namespace gpt {

// The products that go to the Hopper GEMM of kernels/sm90/gemm_sm90.cu (the rest to cuBLASLt).
enum class Sm90GemmUse {
  kNone,  // none
  // the products with a GELU epilogue (the others left the step no faster); the forward one
  // only for inputs narrower than 2048 (cuBLASLt's GELU epilogue is faster from there)
  kGelu,
  kAll,   // every product it applies to
};

struct KernelConfig {
  // Replay a training micro-batch as one CUDA graph (never with hidden dropout).
  bool cuda_graphs = true;
  // Time the cuBLASLt candidates with the same bits at a plan's first use (kernels/lt_gemm.cuh);
  // off: the heuristic's first choice.
  bool gemm_autotune = true;
  Sm90GemmUse sm90_gemm = Sm90GemmUse::kGelu;
  // Head size 64 on compute capability 9.0 runs the wgmma attention of kernels/sm90/.
  bool sm90_attention = true;
  // The flash attention tile shape for head sizes over 64: an index into kFlashTiles.
  int flash_tiles = kFlashDefaultTiles;
  // --bf16: a step's first micro-batch writes the layers' weight gradients in bf16.
  bool bf16_weight_grads = true;
  // Print each cuBLASLt choice with every candidate's time (stderr).
  bool gemm_tune_log = false;
  int gemm_tune_burst = 50;  // back-to-back runs per timing, 1..kMaxGemmTuneBurst
  int gemm_candidates = 8;   // heuristic candidates asked for, 1..kMaxGemmCandidates
};

inline constexpr int kMaxGemmTuneBurst = 1000;
inline constexpr int kMaxGemmCandidates = 64;

}  // namespace gpt
