// Times every cuBLASLt algorithm the heuristic offers (up to 32) for each GEMM of a gpt-train
// --bf16 step, against cublasGemmEx's default choice, and the GELU epilogues against the plain
// GEMM. Tells how much per-shape algorithm choice and epilogue fusion can gain before either is
// built into kernels/matmul.cu. Random bf16 operands (never zeros), CUDA events, median of reps.
// Build and run (repository root, on a machine with a GPU):
//   nvcc -O3 -std=c++20 -I. -gencode=arch=compute_90a,code=sm_90a scripts/bench/gemm_algo_bench.cu
//     -lcublasLt -lcublas -o build/gemm-algo-bench          (one command line)
//   build/gemm-algo-bench [reps]          (default 20)
// Columns: GemmEx (cublasGemmEx default), lt0 (the heuristic's first algorithm: what
// kernels/matmul.cu uses for the forward), best (fastest of the offered algorithms, its index),
// all in µs, and best's TFLOP/s.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    auto rc_ = (x);                                                                    \
    if (int(rc_) != 0) {                                                               \
      std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, int(rc_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

namespace {

__global__ void fill_random(__nv_bfloat16* p, size_t n, unsigned seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2bfloat16(scale * (float(h & 0xffff) / 32768.0f - 1.0f));
  }
}

__global__ void fill_random_f32(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2246822519u ^ seed;
    h ^= h >> 13;
    p[i] = float(h & 0xffff) / 65536.0f - 0.5f;
  }
}

struct Case {
  std::string name;
  cublasOperation_t ta, tb;
  int m, n, k;
  cudaDataType_t dtype;  // C and D
  float beta;
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  cudaDataType_t bias_type = CUDA_R_16BF;
};

constexpr size_t kWorkspace = 32u << 20;
cublasLtHandle_t lt;
cublasHandle_t blas;
void* workspace;
int reps = 20;

size_t type_size(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

template <class F>
float median_us(F&& run) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) run();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(a));
    run();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0f);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double total_lt0 = 0, total_best = 0, total_ex = 0;

void run_case(const Case& c) {
  const int lda = c.ta == CUBLAS_OP_N ? c.m : c.k, acols = c.ta == CUBLAS_OP_N ? c.k : c.m;
  const int ldb = c.tb == CUBLAS_OP_N ? c.k : c.n, bcols = c.tb == CUBLAS_OP_N ? c.n : c.k;
  __nv_bfloat16 *A, *B, *aux = nullptr;
  void *D, *bias = nullptr;
  const size_t an = size_t(lda) * acols, bn = size_t(ldb) * bcols, dn = size_t(c.m) * c.n;
  CK(cudaMalloc(&A, an * 2));
  CK(cudaMalloc(&B, bn * 2));
  CK(cudaMalloc(&D, dn * type_size(c.dtype)));
  fill_random<<<1024, 256>>>(A, an, 1, 1.0f);
  fill_random<<<1024, 256>>>(B, bn, 2, 1.0f);
  if (c.dtype == CUDA_R_32F)
    fill_random_f32<<<1024, 256>>>(static_cast<float*>(D), dn, 3);
  else
    fill_random<<<1024, 256>>>(static_cast<__nv_bfloat16*>(D), dn, 3, 1.0f);
  const bool uses_bias = c.epi == CUBLASLT_EPILOGUE_BIAS || c.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
                         c.epi == CUBLASLT_EPILOGUE_DGELU_BGRAD;
  const bool uses_aux = c.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || c.epi == CUBLASLT_EPILOGUE_DGELU ||
                        c.epi == CUBLASLT_EPILOGUE_DGELU_BGRAD;
  if (uses_bias) {
    CK(cudaMalloc(&bias, c.m * 4));
    CK(cudaMemset(bias, 0, c.m * 4));
  }
  if (uses_aux) {
    CK(cudaMalloc(&aux, dn * 2));
    fill_random<<<1024, 256>>>(aux, dn, 4, 2.0f);
  }
  CK(cudaDeviceSynchronize());

  cublasLtMatmulDesc_t desc;
  CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &c.ta, sizeof(c.ta)));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &c.tb, sizeof(c.tb)));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epi, sizeof(c.epi)));
  if (uses_bias) {
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &c.bias_type,
                                      sizeof(c.bias_type)));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  if (uses_aux) {
    const int64_t ld = c.m;
    const cudaDataType_t at = CUDA_R_16BF;
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                                      sizeof(aux)));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &at,
                                      sizeof(at)));
  }
  cublasLtMatrixLayout_t la, lb, ld;
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, lda, acols, lda));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, ldb, bcols, ldb));
  CK(cublasLtMatrixLayoutCreate(&ld, c.dtype, c.m, c.n, c.m));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                          sizeof(kWorkspace)));
  cublasLtMatmulHeuristicResult_t res[32];
  int found = 0;
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 32, res, &found);
  const float alpha = 1.0f;
  float t0 = -1, best = 1e30f;
  int best_i = -1;
  for (int i = 0; hs == CUBLAS_STATUS_SUCCESS && i < found; ++i) {
    bool failed = false;
    const float t = median_us([&] {
      if (cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &c.beta, D, ld, D, ld, &res[i].algo,
                         workspace, kWorkspace, nullptr) != CUBLAS_STATUS_SUCCESS)
        failed = true;
    });
    if (failed) continue;
    if (i == 0) t0 = t;
    if (t < best) best = t, best_i = i;
  }
  float tex = -1;
  if (c.epi == CUBLASLT_EPILOGUE_DEFAULT) {
    tex = median_us([&] {
      CK(cublasGemmEx(blas, c.ta, c.tb, c.m, c.n, c.k, &alpha, A, CUDA_R_16BF, lda, B, CUDA_R_16BF,
                      ldb, &c.beta, D, c.dtype, c.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
  }
  const double flops = 2.0 * c.m * c.n * double(c.k);
  std::printf("%-34s %6d %6d %6d | %8.1f %8.1f %8.1f (%2d/%2d) | %6.0f TF/s\n", c.name.c_str(), c.m,
              c.n, c.k, tex, t0, best, best_i, found, best > 0 && best < 1e29f ? flops / best / 1e6 : 0.0);
  std::fflush(stdout);
  if (c.epi == CUBLASLT_EPILOGUE_DEFAULT || c.epi == CUBLASLT_EPILOGUE_BIAS) {
    total_lt0 += t0;
    total_best += best;
    total_ex += tex > 0 ? tex : t0;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
  cudaFree(A);
  cudaFree(B);
  cudaFree(D);
  if (bias) cudaFree(bias);
  if (aux) cudaFree(aux);
}

// The GEMMs of one layer (and the classifier chunk) in the row-major terms of kernels/matmul.cu:
//   forward  out^T [OC,N] = W^T [OC,C] · inp^T        (TRANSA = T)
//   dinp     dinp^T [C,N] = W [C,OC] · dout^T         (N, N)
//   dweight  dW^T [C,OC] += inp^T [C,N] · dout [N,OC] (N, T), fp32, beta 1
void model(const char* tag, int N, int C, int Vp, int cls_rows) {
  const int F = 4 * C;
  const auto T = CUBLAS_OP_T, Nn = CUBLAS_OP_N;
  const auto bf = CUDA_R_16BF, f32 = CUDA_R_32F;
  std::printf("\n== %s: N %d, C %d ==\n", tag, N, C);
  std::printf("%-34s %6s %6s %6s | %8s %8s %8s %7s | %s\n", "gemm", "m", "n", "k", "GemmEx", "lt0",
              "best", "(i/n)", "best");
  total_lt0 = total_best = total_ex = 0;
  auto fwd = [&](const char* nm, int IC, int OC, cudaDataType_t out, float beta, cublasLtEpilogue_t e,
                 cudaDataType_t bt) {
    run_case({std::string("fwd ") + nm, T, Nn, OC, N, IC, out, beta, e, bt});
  };
  fwd("qkv bias bf16", C, 3 * C, bf, 0, CUBLASLT_EPILOGUE_BIAS, bf);
  fwd("proj bias+res f32", C, C, f32, 1, CUBLASLT_EPILOGUE_BIAS, f32);
  fwd("fc bias bf16", C, F, bf, 0, CUBLASLT_EPILOGUE_BIAS, bf);
  fwd("fc2 bias+res f32", F, C, f32, 1, CUBLASLT_EPILOGUE_BIAS, f32);
  auto dinp = [&](const char* nm, int IC, int OC, cudaDataType_t out) {
    run_case({std::string("dinp ") + nm, Nn, Nn, IC, N, OC, out, 0});
  };
  dinp("qkv f32", C, 3 * C, f32);
  dinp("qkv bf16", C, 3 * C, bf);
  dinp("proj bf16", C, C, bf);
  dinp("fc f32", C, F, f32);
  dinp("fc bf16", C, F, bf);
  dinp("fc2 bf16", F, C, bf);
  auto dw = [&](const char* nm, int IC, int OC) {
    run_case({std::string("dweight ") + nm, Nn, T, IC, OC, N, f32, 1});
  };
  dw("qkv", C, 3 * C);
  dw("proj", C, C);
  dw("fc", C, F);
  dw("fc2", F, C);
  std::printf("layer sum (x1): GemmEx-or-lt0 %.1f us, lt0 %.1f us, best %.1f us\n", total_ex,
              total_lt0, total_best);
  total_lt0 = total_best = total_ex = 0;
  for (int rows : {cls_rows, N}) {
    run_case({"cls fwd rows " + std::to_string(rows), T, Nn, Vp, rows, C, bf, 0});
    run_case({"cls dinp f32 rows " + std::to_string(rows), Nn, Nn, C, rows, Vp, f32, 0});
    run_case({"cls dinp bf16 rows " + std::to_string(rows), Nn, Nn, C, rows, Vp, bf, 0});
    run_case({"cls dweight rows " + std::to_string(rows), Nn, T, C, Vp, rows, f32, 1});
  }
  std::printf("-- epilogues --\n");
  fwd("fc bias bf16 (again)", C, F, bf, 0, CUBLASLT_EPILOGUE_BIAS, bf);
  fwd("fc GELU_AUX_BIAS bf16", C, F, bf, 0, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, bf);
  run_case({"dinp fc2 DGELU bf16", Nn, Nn, F, N, C, bf, 0, CUBLASLT_EPILOGUE_DGELU});
  run_case({"dinp fc2 DGELU_BGRAD f32 bias", Nn, Nn, F, N, C, bf, 0, CUBLASLT_EPILOGUE_DGELU_BGRAD, f32});
  run_case({"dinp fc2 DGELU_BGRAD bf16 bias", Nn, Nn, F, N, C, bf, 0, CUBLASLT_EPILOGUE_DGELU_BGRAD, bf});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) reps = std::atoi(argv[1]);
  CK(cublasLtCreate(&lt));
  CK(cublasCreate(&blas));
  CK(cudaMalloc(&workspace, kWorkspace));
  CK(cublasSetWorkspace(blas, workspace, kWorkspace));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, cuBLASLt %zu\n", prop.name, cublasLtGetVersion());
  model("GPT-2 124M mbs 16", 16384, 768, 50304, 4096);
  model("GPT-2 350M mbs 16", 16384, 1024, 50304, 4096);
  model("GPT-2 124M mbs 32", 32768, 768, 50304, 4096);
  return 0;
}
