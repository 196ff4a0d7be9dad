#include "kernels/matmul.cuh"

#include <cublasLt.h>

#include <cstdint>

#include <type_traits>

#include "kernels/column_sum.cuh"
#include "kernels/convert.cuh"
#include "kernels/gelu.cuh"
#include "kernels/lt_gemm.cuh"
#include "kernels/sm90/gemm_sm90.cuh"

namespace gpt::cuda {
namespace {

// Row-major [N, K] is column-major [K, N] with leading dimension K, so for cuBLAS (column-major):
//   out^T [OC, N]   = W (as [C, OC] col-major, transposed) · inp^T [C, N]
//   dinp^T [C, N]  += W^T-as-stored [C, OC] · dout^T [OC, N]
//   dweight^T [C, OC] += inp^T [C, N] · dout [N, OC] (dout^T transposed)
void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* A,
          cudaDataType_t at, int lda, const void* Bm, cudaDataType_t bt, int ldb, float beta,
          void* Cm, int ldc, cudaDataType_t ct = CUDA_R_32F) {
  const float alpha = 1.0f;
  GPT_CUDA_CHECK(cublasGemmEx(cublas(), ta, tb, m, n, k, &alpha, A, at, lda, Bm, bt, ldb, &beta,
                              Cm, ct, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

__device__ __forceinline__ float as_float(float v) { return v; }
__device__ __forceinline__ float as_float(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void store_as(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_as(bf16* p, float v) { *p = __float2bfloat16_rn(v); }

template <class T>
__global__ void add_bias_kernel(T* out, const T* bias, int OC, size_t total) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) store_as(out + i, as_float(out[i]) + as_float(bias[i % OC]));
}

template <class T>
void add_bias(T* out, const T* bias, int N, int OC) {
  const size_t total = size_t(N) * OC;
  add_bias_kernel<T><<<ceil_div(total, 256), 256, 0, stream()>>>(out, bias, OC, total);
  GPT_CUDA_CHECK_LAUNCH();
}

template <class T>
struct Identity {
  const T* x;
  int C;
  __device__ void operator()(int r, int c, float v[1]) const { v[0] = as_float(x[size_t(r) * C + c]); }
};

// out^T [OC, N] = W^T · inp^T (+ bias) (+ residual) through cuBLASLt (lt_gemm.cuh): bf16
// operands, out of type out_type (fp32 or bf16), bias (optional) of the same type as out and
// added in the epilogue, residual (optional, same type and shape as out) added with beta = 1.
// With gelu_pre (bf16 out only), out = GELU(x·Wᵀ + b) and gelu_pre = x·Wᵀ + b (the
// GELU_AUX_BIAS epilogue). Returns false (nothing queued) when cuBLASLt has no algorithm.
bool lt_forward(void* out, cudaDataType_t out_type, const void* residual, const bf16* inp,
                const bf16* weight, const void* bias, int N, int C, int OC,
                bf16* gelu_pre = nullptr) {
  LtGemm g;
  g.ta = CUBLAS_OP_T;
  g.m = OC, g.n = N, g.k = C;
  g.dtype = out_type;
  g.accumulate = residual != nullptr;
  g.epilogue = gelu_pre ? (bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
                        : (bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
  return lt_gemm(g, weight, inp, residual, out, bias, gelu_pre);
}

void forward(float* out, const void* inp, const void* weight, cudaDataType_t type,
             const float* bias, int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  if (bias && type == CUDA_R_16BF &&
      lt_forward(out, CUDA_R_32F, nullptr, static_cast<const bf16*>(inp),
                 static_cast<const bf16*>(weight), bias, N, C, OC))
    return;
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, weight, type, C, inp, type, C, 0.0f, out, OC);
  if (bias) add_bias(out, bias, N, OC);
}

void backward(float* dinp, float* dweight, const void* dout, const void* inp, const void* weight,
              cudaDataType_t type, int N, int C, int OC, float dinp_beta = 1.0f) {
  if (N == 0) return;
  if (dinp)
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, weight, type, C, dout, type, OC, dinp_beta, dinp, C);
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, type, C, dout, type, OC, 1.0f, dweight, C);
}

// The bf16 / fp16 backward: dout rounded to the operand type in stream-ordered scratch for the
// two GEMMs; dbias summed from the fp32 dout.
template <class Half>
void backward_half(float* dinp, float* dweight, float* dbias, const float* dout, const Half* inp,
                   const Half* weight, cudaDataType_t type, int N, int C, int OC, bool accumulate_dinp) {
  if (N == 0) return;
  Scratch<Half> dout16(size_t(N) * OC);
  if constexpr (std::is_same_v<Half, bf16>)
    to_bf16(dout16, dout, size_t(N) * OC);
  else
    to_fp16(dout16, dout, size_t(N) * OC);
  backward(dinp, dweight, dout16.get(), inp, weight, type, N, C, OC, accumulate_dinp ? 1.0f : 0.0f);
  if (dbias) column_sum_add<1>(ColumnTargets<1>{{dbias}}, Identity<float>{dout, OC}, N, OC);
}

}  // namespace

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int B,
                    int T, int C, int OC) {
  forward(out, inp, weight, CUDA_R_32F, bias, B * T, C, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC) {
  const int N = B * T;
  backward(dinp, dweight, dout, inp, weight, CUDA_R_32F, N, C, OC);
  if (dbias) column_sum_add<1>(ColumnTargets<1>{{dbias}}, Identity<float>{dout, OC}, N, OC);
}

void matmul_forward_bf16(float* out, const bf16* inp, const bf16* weight, const float* bias, int B,
                         int T, int C, int OC) {
  forward(out, inp, weight, CUDA_R_16BF, bias, B * T, C, OC);
}

void matmul_backward_bf16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const bf16* inp, const bf16* weight, int B, int T, int C, int OC,
                          bool accumulate_dinp) {
  backward_half(dinp, dweight, dbias, dout, inp, weight, CUDA_R_16BF, B * T, C, OC, accumulate_dinp);
}

void matmul_forward_fp16(float* out, const fp16* inp, const fp16* weight, const float* bias, int B,
                         int T, int C, int OC) {
  forward(out, inp, weight, CUDA_R_16F, bias, B * T, C, OC);
}

void matmul_backward_fp16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const fp16* inp, const fp16* weight, int B, int T, int C, int OC,
                          bool accumulate_dinp) {
  backward_half(dinp, dweight, dbias, dout, inp, weight, CUDA_R_16F, B * T, C, OC, accumulate_dinp);
}

void matmul_forward_bf16_out(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias,
                             int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  if (gemm_sm90({N, OC, C, inp, weight, bias, out}, Sm90Epilogue::kBf16)) return;
  if (lt_forward(out, CUDA_R_16BF, nullptr, inp, weight, bias, N, C, OC)) return;
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, weight, CUDA_R_16BF, C, inp, CUDA_R_16BF, C, 0.0f, out,
       OC, CUDA_R_16BF);
  if (bias) add_bias(out, bias, N, OC);
}

void matmul_forward_bf16_gelu(bf16* out, bf16* pre, const bf16* inp, const bf16* weight,
                              const bf16* bias, int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  if (gemm_sm90({N, OC, C, inp, weight, bias, out, pre}, Sm90Epilogue::kBf16Gelu)) return;
  if (lt_forward(out, CUDA_R_16BF, nullptr, inp, weight, bias, N, C, OC, pre)) return;
  matmul_forward_bf16_out(pre, inp, weight, bias, N, C, OC);
  gelu_forward_bf16(out, pre, size_t(N) * OC);
}

void matmul_forward_bf16_residual(float* out, const float* residual, const bf16* inp,
                                  const bf16* weight, const float* bias, int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  if (lt_forward(out, CUDA_R_32F, residual, inp, weight, bias, N, C, OC)) return;
  if (out != residual)
    GPT_CUDA_CHECK(cudaMemcpyAsync(out, residual, size_t(N) * OC * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream()));
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, weight, CUDA_R_16BF, C, inp, CUDA_R_16BF, C, 1.0f, out,
       OC);
  if (bias) add_bias(out, bias, N, OC);
}

void matmul_backward_bf16_dinp(float* dinp, bf16* dinp_h, const bf16* dout, const bf16* weight,
                               int N, int C, int OC) {
  if (N == 0) return;
  void* out = dinp ? static_cast<void*>(dinp) : dinp_h;
  const cudaDataType_t type = dinp ? CUDA_R_32F : CUDA_R_16BF;
  if (!dinp) {
    Sm90Gemm s{N, C, OC, dout, weight, nullptr, dinp_h};
    s.b_kn = true;
    if (gemm_sm90(s, Sm90Epilogue::kBf16)) return;
  }
  LtGemm g;
  g.m = C, g.n = N, g.k = OC;
  g.dtype = type;
  if (lt_gemm(g, weight, dout, nullptr, out)) return;
  gemm(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, weight, CUDA_R_16BF, C, dout, CUDA_R_16BF, OC, 0.0f,
       out, C, type);
}

void matmul_backward_bf16_dinp_gelu(bf16* dinp_h, bf16* act, float* dbias, const bf16* dout,
                                    const bf16* weight, const bf16* pre, int N, int C, int OC) {
  if (N == 0 || C == 0) return;
  {
    const int chunks = N / 64;  // the kernel's 64-row chunks (it takes N % 128 == 0 only)
    Scratch<float> partial(dbias ? size_t(chunks) * C : 0);
    Sm90Gemm s{N, C, OC, dout, weight, nullptr, dinp_h};
    s.b_kn = true;
    s.gelu_pre = pre;
    s.gelu_out = act;
    s.dbias_partial = dbias ? partial.get() : nullptr;
    if (gemm_sm90(s, Sm90Epilogue::kBf16DGelu)) {
      if (dbias) column_sum_finish<1>({{dbias}}, std::move(partial), chunks, C);
      return;
    }
  }
  Scratch<bf16> dh(size_t(N) * C);
  matmul_backward_bf16_dinp(nullptr, dh, dout, weight, N, C, OC);
  gelu_backward_bf16_bias(dinp_h, act, pre, dh, N, C, dbias);
}

namespace {
// dweight [OC,C] (= or += with accumulate) doutᵀ·inp, of type fp32 or bf16 (written only).
void dweight_gemm(void* dweight, cudaDataType_t type, const bf16* dout, const bf16* inp, int N,
                  int C, int OC, bool accumulate) {
  if (N == 0) {
    const size_t bytes = type == CUDA_R_16BF ? sizeof(bf16) : sizeof(float);
    if (!accumulate) GPT_CUDA_CHECK(cudaMemsetAsync(dweight, 0, size_t(OC) * C * bytes, stream()));
    return;
  }
  LtGemm g;
  g.tb = CUBLAS_OP_T;
  g.m = C, g.n = OC, g.k = N;
  g.dtype = type;
  g.accumulate = accumulate;
  if (lt_gemm(g, inp, dout, accumulate ? dweight : nullptr, dweight)) return;
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, CUDA_R_16BF, C, dout, CUDA_R_16BF, OC,
       accumulate ? 1.0f : 0.0f, dweight, C, type);
}
}  // namespace

void matmul_backward_bf16_dweight(float* dweight, const bf16* dout, const bf16* inp, int N, int C,
                                  int OC, bool accumulate) {
  dweight_gemm(dweight, CUDA_R_32F, dout, inp, N, C, OC, accumulate);
}

void matmul_backward_bf16_dweight(bf16* dweight, const bf16* dout, const bf16* inp, int N, int C,
                                  int OC) {
  dweight_gemm(dweight, CUDA_R_16BF, dout, inp, N, C, OC, /*accumulate=*/false);
}

void bias_grad(float* dbias, const float* dout, int N, int OC) {
  column_sum_add<1>(ColumnTargets<1>{{dbias}}, Identity<float>{dout, OC}, N, OC);
}

void bias_grad(float* dbias, const bf16* dout, int N, int OC) {
  if (N <= 0 || OC <= 0) return;
  if (OC % 8 != 0 || reinterpret_cast<uintptr_t>(dout) % 16 != 0)
    return column_sum_add<1>(ColumnTargets<1>{{dbias}}, Identity<bf16>{dout, OC}, N, OC);
  // 16-byte loads: with 2-byte loads the sum is bound by load instructions, not bandwidth.
  const int chunks = int(ceil_div(N, kBf16SumRows));
  Scratch<float> partial(size_t(chunks) * OC);
  column_sum_bf16_partial_kernel<<<dim3(ceil_div(OC, 256), chunks), 256, 0, stream()>>>(
      partial, dout, N, OC);
  GPT_CUDA_CHECK_LAUNCH();
  column_sum_finish<1>({{dbias}}, std::move(partial), chunks, OC);
}

}  // namespace gpt::cuda
