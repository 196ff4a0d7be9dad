#include "train/loop/kernel_flags.h"

#include <string>

#include "common/cli/error.h"

namespace gpt {
namespace {

bool on_off(const std::string& flag, const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw suite::UsageError("--" + flag + " must be on or off, not '" + value + "'");
}

}  // namespace

boost::program_options::options_description kernel_options(KernelFlags& f, KernelConfig& k) {
  namespace po = boost::program_options;
  po::options_description d("CUDA kernel choices (defaults: the fastest with run-to-run "
                            "identical bits)");
  d.add_options()
      ("cuda-graphs", po::value(&f.cuda_graphs)->default_value("on"),
       "on | off: replay each training micro-batch as one CUDA graph (not under tensor or pipeline parallelism)")
      ("cuda-graph-impl", po::value(&f.cuda_graph_impl),
       "Megatron's spelling: local (= --cuda-graphs on) | none (= off)")
      ("gemm-autotune", po::value(&f.gemm_autotune)->default_value("on"),
       "on | off: time the cuBLASLt candidates with the same bits at a GEMM shape's first use "
       "and keep the fastest (off: the heuristic's first)")
      ("gemm-candidates", po::value(&k.gemm_candidates)->default_value(8),
       "cuBLASLt heuristic candidates per GEMM shape (1-64)")
      ("gemm-tune-burst", po::value(&k.gemm_tune_burst)->default_value(50),
       "back-to-back runs per autotuning timing (1-1000)")
      ("gemm-tune-log", po::bool_switch(&k.gemm_tune_log),
       "print each autotuning choice and every candidate's time on stderr")
      ("sm90-gemm", po::value(&f.sm90_gemm)->default_value("gelu"),
       "off | gelu | all: the products that run on the Hopper GEMM (compute capability 9.0): "
       "none, those with a GELU epilogue (the forward one for inputs narrower than 2048), or "
       "every one it takes")
      ("sm90-attention", po::value(&f.sm90_attention)->default_value("on"),
       "on | off: bf16 head sizes 64, 96 and 128 on compute capability 9.0 run the Hopper flash "
       "attention (with attention dropout too)")
      ("flash-tiles", po::value(&f.flash_tiles)->default_value(f.flash_tiles),
       ("the flash attention tile shape of the mma.sync kernels for head sizes 80-128: <query "
        "rows per block>x<K/V rows per iteration>w<warps>: " +
        flash_tiles_names() + " (flash-attention-bench --sweep times each)")
           .c_str())
      ("bf16-weight-grads", po::value(&f.bf16_weight_grads)->default_value("on"),
       "on | off: --bf16: a step's first micro-batch writes the weight gradients in bf16, as "
       "autocast does (off: fp32)");
  return d;
}

void check_kernel_flags(const KernelFlags& f, KernelConfig& k) {
  k.cuda_graphs = on_off("cuda-graphs", f.cuda_graphs);
  if (!f.cuda_graph_impl.empty()) {
    if (f.cuda_graph_impl != "local" && f.cuda_graph_impl != "none")
      throw suite::UsageError("--cuda-graph-impl must be local or none, not '" +
                              f.cuda_graph_impl + "'");
    k.cuda_graphs = f.cuda_graph_impl == "local" && f.cuda_graphs == "on";
  }
  k.gemm_autotune = on_off("gemm-autotune", f.gemm_autotune);
  k.sm90_attention = on_off("sm90-attention", f.sm90_attention);
  k.bf16_weight_grads = on_off("bf16-weight-grads", f.bf16_weight_grads);
  k.flash_tiles = flash_tiles_index(f.flash_tiles);
  if (k.flash_tiles < 0)
    throw suite::UsageError("--flash-tiles must be one of " + flash_tiles_names() + ", not '" +
                            f.flash_tiles + "'");
  if (f.sm90_gemm == "off")
    k.sm90_gemm = Sm90GemmUse::kNone;
  else if (f.sm90_gemm == "gelu")
    k.sm90_gemm = Sm90GemmUse::kGelu;
  else if (f.sm90_gemm == "all")
    k.sm90_gemm = Sm90GemmUse::kAll;
  else
    throw suite::UsageError("--sm90-gemm must be off, gelu or all, not '" + f.sm90_gemm + "'");
  if (k.gemm_candidates < 1 || k.gemm_candidates > kMaxGemmCandidates)
    throw suite::UsageError("--gemm-candidates must be in 1.." +
                            std::to_string(kMaxGemmCandidates));
  if (k.gemm_tune_burst < 1 || k.gemm_tune_burst > kMaxGemmTuneBurst)
    throw suite::UsageError("--gemm-tune-burst must be in 1.." +
                            std::to_string(kMaxGemmTuneBurst));
}

}  // namespace gpt
