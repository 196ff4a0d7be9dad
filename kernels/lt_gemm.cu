#include "kernels/lt_gemm.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/dropout_mask.h"

namespace gpt::cuda {
namespace {

constexpr int kTimedRounds = 3;

// The calling thread's KernelConfig (kernel_config.h), its counts kept in range.
int lt_candidates() { return std::clamp(kernel_config().gemm_candidates, 1, kMaxGemmCandidates); }
int tune_burst() { return std::clamp(kernel_config().gemm_tune_burst, 1, kMaxGemmTuneBurst); }
bool tune_log() { return kernel_config().gemm_tune_log; }

bool lt_ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

// An algorithm's configuration attribute (algo id, tile, cluster shape), -1 if unreadable.
template <class T>
int algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t written = 0;
  if (!lt_ok(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written)))
    return -1;
  return int(v);
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool ok = false;
};

// The shape and epilogue, and the choices that decide the algorithm (autotuning, candidates).
using Key = std::tuple<int, int, int, int, int, int, bool, int, bool, int>;

cublasLtHandle_t lt_handle() {
  thread_local cublasLtHandle_t handle = nullptr;
  if (!handle) GPT_CUDA_CHECK(cublasLtCreate(&handle));
  return handle;
}

bool autotune_enabled() { return kernel_config().gemm_autotune; }

// XOR of a hash of every 16-byte word with its index: independent of the order of the adds.
__global__ void checksum_kernel(unsigned long long* out, const uint4* p, size_t n) {
  unsigned long long h = 0;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    const uint64_t lo = (uint64_t(v.y) << 32) | v.x, hi = (uint64_t(v.w) << 32) | v.z;
    h ^= mix64(lo ^ mix64(hi + i));
  }
  atomicXor(out, h);
}

__global__ void checksum_tail_kernel(unsigned long long* out, const unsigned char* p, size_t begin,
                                     size_t end) {
  unsigned long long h = 0;
  for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) h ^= mix64(p[i] + (i << 8));
  atomicXor(out, h);
}

unsigned long long checksum(const void* p, size_t bytes, unsigned long long* dev) {
  GPT_CUDA_CHECK(cudaMemsetAsync(dev, 0, sizeof(*dev), stream()));
  const size_t n16 = bytes / 16;
  if (n16) checksum_kernel<<<1024, 256, 0, stream()>>>(dev, static_cast<const uint4*>(p), n16);
  if (bytes % 16)
    checksum_tail_kernel<<<1, 32, 0, stream()>>>(dev, static_cast<const unsigned char*>(p),
                                                   n16 * 16, bytes);
  GPT_CUDA_CHECK_LAUNCH();
  unsigned long long host = 0;
  GPT_CUDA_CHECK(cudaMemcpyAsync(&host, dev, sizeof(host), cudaMemcpyDeviceToHost, stream()));
  GPT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return host;
}

bool capturing() {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream(), &st) == cudaSuccess && st != cudaStreamCaptureStatusNone;
}

// Picks p.algo among the candidates whose output on these operands is bit-identical to
// candidates[0]'s (see lt_gemm.cuh). Runs with beta 0 into the call's own output; a call that
// accumulates runs as it will in training, with beta 1, on a copy of its C made before each run
// (C may be D, which must stay as it is): timed with beta 0, the choice would ignore the read of
// C and can pick an algorithm much slower with beta 1. A GELU epilogue's pre-activation output is
// written by every run and again by the call itself.
void autotune(Plan& p, const LtGemm& g, const cublasLtMatmulHeuristicResult_t* cand, int found,
              const bf16* a, const bf16* b, const void* c, void* d) {
  const size_t bytes = size_t(g.m) * g.n * (g.dtype == CUDA_R_32F ? 4 : 2);
  Scratch<unsigned char> scratch(g.accumulate ? bytes : 0);
  Scratch<unsigned long long> sum(1);
  void* out = g.accumulate ? static_cast<void*>(scratch.get()) : d;
  const float alpha = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
  auto prepare = [&] {
    if (g.accumulate)
      GPT_CUDA_CHECK(cudaMemcpyAsync(out, c, bytes, cudaMemcpyDeviceToDevice, stream()));
  };
  auto run = [&](int i) {
    return lt_ok(cublasLtMatmul(lt_handle(), p.desc, &alpha, a, p.a, b, p.b, &beta, out, p.d, out,
                                p.d, &cand[i].algo, cublas_workspace(), cand[i].workspaceSize,
                                stream()));
  };
  cudaEvent_t start, stop;
  GPT_CUDA_CHECK(cudaEventCreate(&start));
  GPT_CUDA_CHECK(cudaEventCreate(&stop));
  // One timing is a burst of back-to-back runs (KernelConfig::gemm_tune_burst) without
  // re-preparing C: the accumulating runs then add into a changing C, which changes the values
  // but not the work. In a step a product follows other kernels without a gap, which a single
  // run after a synchronisation does not see: it carries a launch's ramp-up and favours other
  // algorithms than the step's fastest.
  const int burst = tune_burst();
  auto time_us = [&](int i) {
    prepare();
    GPT_CUDA_CHECK(cudaEventRecord(start, stream()));
    for (int j = 0; j < burst; ++j)
      if (!run(i)) return 1e30f;
    GPT_CUDA_CHECK(cudaEventRecord(stop, stream()));
    GPT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    GPT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1000.0f / burst;
  };
  prepare();
  if (run(0)) {
    // The candidates that sum in the first one's order; only these may be chosen.
    const unsigned long long reference = checksum(out, bytes, sum);
    std::vector<int> same{0}, other;
    for (int i = 1; i < found; ++i) {
      if (cand[i].workspaceSize > kCublasWorkspaceBytes) continue;
      prepare();
      if (!run(i)) continue;
      (checksum(out, bytes, sum) == reference ? same : other).push_back(i);
    }
    // Rounds over all candidates, so that the card warming up (and, in long bursts, reaching
    // its power cap) does not penalise whichever candidates come last; each keeps its best.
    // With the log on, the candidates with other bits are timed after them, never chosen: what
    // choosing among all of them would buy.
    std::vector<int> timed = same;
    if (tune_log()) timed.insert(timed.end(), other.begin(), other.end());
    std::vector<float> best(timed.size(), 1e30f);
    for (int r = 0; r < kTimedRounds; ++r)
      for (size_t j = 0; j < timed.size(); ++j) best[j] = std::min(best[j], time_us(timed[j]));
    const auto same_end = best.begin() + same.size();
    const size_t win = std::min_element(best.begin(), same_end) - best.begin();
    p.algo = cand[same[win]].algo;
    p.workspace = cand[same[win]].workspaceSize;
    if (tune_log()) {
      // Each candidate's configuration (tile and cluster shape as cublasLt numbers them) and
      // best time, marked "other bits" where its output differs from the first one's; -1: not
      // run (workspace too large, or the run failed).
      for (int i = 0; i < found; ++i) {
        const size_t j = std::find(timed.begin(), timed.end(), i) - timed.begin();
        const bool ran = j < timed.size();
        std::fprintf(stderr,
                     "lt_gemm tune:   #%d algo %d tile %d cluster %d splitk %d: %.1f us%s\n", i,
                     algo_config<int32_t>(cand[i].algo, CUBLASLT_ALGO_CONFIG_ID),
                     algo_config<uint32_t>(cand[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                     algo_config<uint16_t>(cand[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
                     algo_config<int32_t>(cand[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                     ran ? best[j] : -1.0f, ran && j >= same.size() ? " (other bits)" : "");
      }
      std::fprintf(stderr,
                   "lt_gemm tune: m %d n %d k %d ta %d tb %d acc %d epi %d: %d candidates, %zu "
                   "same bits, chose #%d %.1f us (first %.1f us, best with other bits %.1f us)\n",
                   g.m, g.n, g.k, int(g.ta), int(g.tb), int(g.accumulate), int(g.epilogue), found,
                   same.size(), same[win], best[win], best[0],
                   other.empty() ? -1.0f : *std::min_element(same_end, best.end()));
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace

bool lt_gemm(const LtGemm& g, const bf16* a, const bf16* b, const void* c, void* d,
             const void* bias, bf16* aux) {
  thread_local std::map<Key, Plan> plans;
  const Key key{int(g.ta), int(g.tb), g.m, g.n, g.k, int(g.dtype), g.accumulate,
                int(g.epilogue), autotune_enabled(), lt_candidates()};
  auto [it, fresh] = plans.try_emplace(key);
  Plan& p = it->second;
  const bool has_bias = g.epilogue == CUBLASLT_EPILOGUE_BIAS ||
                        g.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  const bool has_aux = g.epilogue == CUBLASLT_EPILOGUE_GELU_AUX ||
                       g.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  if (fresh) {
    const cudaDataType_t aux_type = CUDA_R_16BF;
    const int64_t aux_ld = g.m;
    const int lda = g.ta == CUBLAS_OP_N ? g.m : g.k, acols = g.ta == CUBLAS_OP_N ? g.k : g.m;
    const int ldb = g.tb == CUBLAS_OP_N ? g.k : g.n, bcols = g.tb == CUBLAS_OP_N ? g.n : g.k;
    bool ok =
        (!has_aux || (g.dtype == CUDA_R_16BF && g.m % 8 == 0 && !g.accumulate)) &&
        lt_ok(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) &&
        lt_ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta,
                                             sizeof(g.ta))) &&
        lt_ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb,
                                             sizeof(g.tb))) &&
        lt_ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &g.epilogue,
                                             sizeof(g.epilogue))) &&
        (!has_bias || lt_ok(cublasLtMatmulDescSetAttribute(
                          p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &g.dtype, sizeof(g.dtype)))) &&
        (!has_aux ||
         (lt_ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                               &aux_ld, sizeof(aux_ld))) &&
          lt_ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                                               &aux_type, sizeof(aux_type))))) &&
        lt_ok(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, lda, acols, lda)) &&
        lt_ok(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, ldb, bcols, ldb)) &&
        lt_ok(cublasLtMatrixLayoutCreate(&p.d, g.dtype, g.m, g.n, g.m));
    cublasLtMatmulHeuristicResult_t cand[kMaxGemmCandidates]{};
    int found = 0;
    if (ok) {
      cublasLtMatmulPreference_t pref = nullptr;
      const size_t ws = kCublasWorkspaceBytes;
      ok = lt_ok(cublasLtMatmulPreferenceCreate(&pref)) &&
           lt_ok(cublasLtMatmulPreferenceSetAttribute(
               pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws))) &&
           lt_ok(cublasLtMatmulAlgoGetHeuristic(lt_handle(), p.desc, p.a, p.b, p.d, p.d, pref,
                                                lt_candidates(), cand, &found)) &&
           found > 0;
      if (pref) cublasLtMatmulPreferenceDestroy(pref);
    }
    if (ok) {
      p.algo = cand[0].algo;
      p.workspace = cand[0].workspaceSize;
    }
    p.ok = ok;
    if (ok && has_bias)  // the candidates run with this call's bias (and aux) in place
      ok = lt_ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof(bias)));
    if (ok && has_aux)
      ok = lt_ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                                &aux, sizeof(aux)));
    if (ok && found > 1 && autotune_enabled() && !capturing())
      autotune(p, g, cand, found, a, b, c, d);
  }
  if (!p.ok) return false;
  if (has_bias && !lt_ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                        &bias, sizeof(bias))))
    return false;
  if (has_aux && !lt_ok(cublasLtMatmulDescSetAttribute(
                     p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux))))
    return false;
  const float alpha = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
  GPT_CUDA_CHECK(cublasLtMatmul(lt_handle(), p.desc, &alpha, a, p.a, b, p.b, &beta,
                                g.accumulate ? c : d, p.d, d, p.d, &p.algo, cublas_workspace(),
                                p.workspace, stream()));
  return true;
}

}  // namespace gpt::cuda
