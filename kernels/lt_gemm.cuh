// bf16 GEMMs through cuBLASLt with a per-shape plan: one descriptor per shape and epilogue, its
// algorithm chosen at first use and cached per host thread and autotuning setting
// (kernels/matmul.cu builds on this).
//
// Algorithm choice (KernelConfig, kernel_config.h): the heuristic offers up to gemm_candidates
// (default 8) algorithms. At a plan's first use (not while a CUDA graph is being captured, and
// unless gemm_autotune is off), each candidate is run once on the call's own operands and kept
// only if its output is bit-identical to the heuristic's first choice (a checksum of every output
// byte); the kept ones are timed by CUDA events as bursts of gemm_tune_burst (default 50)
// back-to-back runs, in three rounds over all of them, and the fastest is used from then on
// (gemm_tune_log prints each choice, and the times of the candidates with other bits).
// Candidates that sum in another order (split-K, another reduction) are thereby never chosen, so
// which one wins a close race cannot change a bit of the results: runs stay bit-identical run to
// run. Without autotuning the heuristic's first choice is used.
#pragma once

#include <cublasLt.h>

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// D [m, n] (column-major, ld m) = op(A) · op(B) (+ C) with bf16 A and B, fp32 accumulation.
//   op(A) [m, k]: A stored [m, k] (ta N, ld m) or [k, m] (ta T, ld k);
//   op(B) [k, n]: B stored [k, n] (tb N, ld k) or [n, k] (tb T, ld n).
struct LtGemm {
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  int m = 0, n = 0, k = 0;
  cudaDataType_t dtype = CUDA_R_32F;  // C and D
  bool accumulate = false;            // D = A·B + C (beta 1); C may be D itself
  // DEFAULT, BIAS (bias [m] of dtype), GELU_AUX or GELU_AUX_BIAS (D = GELU(A·B + bias) and the
  // pre-activation to aux, bf16 [m, n], ld m; bf16 D, m % 8 == 0, no accumulate).
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

// Queues the GEMM on stream(); false (nothing queued) when cuBLASLt offers no algorithm.
bool lt_gemm(const LtGemm& g, const bf16* a, const bf16* b, const void* c, void* d,
             const void* bias = nullptr, bf16* aux = nullptr);

}  // namespace gpt::cuda
