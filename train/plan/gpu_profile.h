// What one GPU type does with the model: forward and backward milliseconds of the embedding, one
// transformer layer and the output layer per micro-batch, at each micro-batch and tensor-parallel
// size, and the per-layer memory. Measured profiles come from `gpt-train --profile-layers` (the
// JSON format of data/README.md, "Layer profiles"); an analytic profile derives the same numbers
// from a GPU's published peak TFLOP/s and memory bandwidth, so that a cluster can be planned
// before anything was measured.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "train/plan/model_shape.h"

namespace plan {

struct PartTimes {
  double forward_ms = 0, backward_ms = 0;
};

struct ProfileEntry {
  int micro_batch = 1, tp = 1;
  PartTimes embedding, layer, head;
  // Bytes per GPU of one layer's saved activations (without and with recomputation) and weights;
  // < 0: not measured (the CUDA backend's buffer plan gives them).
  double layer_activation_bytes = -1, layer_activation_bytes_recompute = -1, layer_weight_bytes = -1;
  // The layer times at tp > 1 already include its tensor-parallel all-reduces.
  bool includes_tp_communication = false;
  std::string note;  // where the numbers come from, for --explain
};

// Published dense bf16 tensor TFLOP/s, memory bandwidth and memory of a GPU type.
struct GpuSpec {
  std::string name;
  double memory_gib = 0, peak_tflops = 0, memory_gbs = 0;
};
// The built-in table (A10, RTX3090, A100-40GB, A100-80GB, H100, H200, V100); nullptr when the
// name (compared without case, '-', '_' or spaces) is not in it.
const GpuSpec* find_gpu_spec(const std::string& name);
std::string known_gpu_specs();  // "A10, RTX3090, ..." for messages
// Type names compare equal when they are the same without case and separators.
bool same_gpu_type(const std::string& a, const std::string& b);

class GpuProfile {
 public:
  std::string gpu;     // the type name
  std::string source;  // the file, or "analytic (...)"
  double memory_gib = 0;           // 0: unknown here (the cluster file gives it)
  double memory_gbs = 0;           // for the optimizer step's time; 0: unknown
  double optimizer_ms_per_gparam = -1;  // measured AdamW step per 1e9 parameters; < 0: from memory_gbs

  // The numbers at micro-batch b and tensor-parallel size tp, or nothing when a measured profile
  // lacks that pair (the search then skips the layouts that need it).
  std::optional<ProfileEntry> entry(const ModelShape& m, int b, int tp) const;
  // Micro-batch sizes this profile can answer at tp (analytic: every power of two up to `limit`).
  std::vector<int> micro_batches(int tp, int limit) const;
  bool analytic() const { return spec_.has_value(); }

  std::vector<ProfileEntry> entries;  // measured ones (empty for an analytic profile)

  static GpuProfile measured(std::string gpu, std::string source, std::vector<ProfileEntry> entries);
  // efficiency: the fraction of peak the matrix products reach.
  static GpuProfile from_spec(const GpuSpec& spec, double efficiency);

 private:
  std::optional<GpuSpec> spec_;
  double efficiency_ = 0.5;
};

// Reads one profile file and checks that it was measured for `model`'s hidden size, heads, FFN
// size, sequence and vocabulary. Throws suite::ToolError naming the file and the field.
GpuProfile load_profile(const std::string& path, const ModelShape& model);

}  // namespace plan
