#include "kernels/matmul.cuh"

#include <cublasLt.h>

#include <map>
#include <tuple>
#include <type_traits>

#include "kernels/column_sum.cuh"
#include "kernels/convert.cuh"

namespace gpt::cuda {
namespace {

// Row-major [N, K] is column-major [K, N] with leading dimension K, so for cuBLAS (column-major):
//   out^T [OC, N]   = W (as [C, OC] col-major, transposed) · inp^T [C, N]
//   dinp^T [C, N]  += W^T-as-stored [C, OC] · dout^T [OC, N]
//   dweight^T [C, OC] += inp^T [C, N] · dout [N, OC] (dout^T transposed)
void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* A,
          cudaDataType_t at, int lda, const void* Bm, cudaDataType_t bt, int ldb, float beta,
          float* Cm, int ldc) {
  const float alpha = 1.0f;
  GPT_CUDA_CHECK(cublasGemmEx(cublas(), ta, tb, m, n, k, &alpha, A, at, lda, Bm, bt, ldb, &beta,
                              Cm, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

__global__ void add_bias_kernel(float* out, const float* bias, int OC, size_t total) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) out[i] += bias[i % OC];
}

struct Identity {
  const float* x;
  int C;
  __device__ void operator()(int r, int c, float v[1]) const { v[0] = x[size_t(r) * C + c]; }
};

// out^T [OC, N] = W^T · inp^T + bias (bf16 operands, fp32 out and bias) through cuBLASLt
// with the bias in the epilogue. Returns false (nothing queued) when cuBLASLt has no algorithm
// for the shape. The algorithm is chosen once per shape by the heuristic and cached per host
// thread; one algorithm on one stream gives the same bits run to run.
bool forward_lt_bias(float* out, const bf16* inp, const bf16* weight, const float* bias, int N,
                     int C, int OC) {
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    size_t workspace = 0;
    bool ok = false;
  };
  constexpr size_t kWorkspace = 32u << 20;
  thread_local cublasLtHandle_t handle = nullptr;
  thread_local std::map<std::tuple<int, int, int>, Plan> plans;
  if (!handle && cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) return false;
  auto [it, fresh] = plans.try_emplace({N, C, OC});
  Plan& p = it->second;
  if (fresh) {
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = CUDA_R_32F;
    bool ok = cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                             sizeof(ta)) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                             sizeof(tb)) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                             sizeof(epi)) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                             &bias_type, sizeof(bias_type)) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, C, OC, C) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, C, N, C) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, OC, N, OC) == CUBLAS_STATUS_SUCCESS;
    if (ok) {
      cublasLtMatmulPreference_t pref = nullptr;
      cublasLtMatmulHeuristicResult_t res{};
      int found = 0;
      ok = cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
           cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &kWorkspace, sizeof(kWorkspace)) ==
               CUBLAS_STATUS_SUCCESS &&
           cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.d, p.d, pref, 1, &res,
                                          &found) == CUBLAS_STATUS_SUCCESS &&
           found > 0;
      if (pref) cublasLtMatmulPreferenceDestroy(pref);
      if (ok) {
        p.algo = res.algo;
        p.workspace = res.workspaceSize;
      }
    }
    p.ok = ok;
  }
  if (!p.ok) return false;
  if (cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                     sizeof(bias)) != CUBLAS_STATUS_SUCCESS)
    return false;
  Scratch<unsigned char> ws(p.workspace);
  const float alpha = 1.0f, beta = 0.0f;
  GPT_CUDA_CHECK(cublasLtMatmul(handle, p.desc, &alpha, weight, p.a, inp, p.b, &beta, out, p.d,
                                out, p.d, &p.algo, ws.get(), p.workspace, stream()));
  return true;
}

void forward(float* out, const void* inp, const void* weight, cudaDataType_t type,
             const float* bias, int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  if (bias && type == CUDA_R_16BF &&
      forward_lt_bias(out, static_cast<const bf16*>(inp), static_cast<const bf16*>(weight), bias,
                      N, C, OC))
    return;
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, weight, type, C, inp, type, C, 0.0f, out, OC);
  if (bias) {
    const size_t total = size_t(N) * OC;
    add_bias_kernel<<<ceil_div(total, 256), 256, 0, stream()>>>(out, bias, OC, total);
    GPT_CUDA_CHECK_LAUNCH();
  }
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
  if (dbias) column_sum_add<1>(ColumnTargets<1>{{dbias}}, Identity{dout, OC}, N, OC);
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
  if (dbias) column_sum_add<1>(ColumnTargets<1>{{dbias}}, Identity{dout, OC}, N, OC);
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

}  // namespace gpt::cuda
