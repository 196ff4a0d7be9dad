// gpt-train's CUDA kernel choices (kernels/kernel_config.h) as flags: --cuda-graphs,
// --cuda-graph-impl, --gemm-autotune, --gemm-candidates, --gemm-tune-burst, --gemm-tune-log,
// --sm90-gemm, --sm90-attention, --flash-tiles, --bf16-weight-grads. Part of options.cpp's
// command line.
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "kernels/kernel_config.h"

namespace gpt {

// The on|off (and off|gelu|all) words as given, checked after parsing.
struct KernelFlags {
  std::string cuda_graphs = "on", cuda_graph_impl, gemm_autotune = "on", sm90_gemm = "gelu",
              sm90_attention = "on", bf16_weight_grads = "on",
              flash_tiles = kFlashTiles[kFlashDefaultTiles].name;
};

// The flags' descriptions; the numbers and --gemm-tune-log go straight into k.
boost::program_options::options_description kernel_options(KernelFlags& f, KernelConfig& k);
// Fills k from f; throws suite::UsageError naming the flag for a bad value.
void check_kernel_flags(const KernelFlags& f, KernelConfig& k);

}  // namespace gpt
