// A training run as gpt-launch resolves it: a model preset (presets/*.yaml: gpt-train flags by name,
// plus the node count and time limit it was made for), overrides by flag name, and the cluster's
// settings (from a cluster YAML file or gpt-launch's options). Mistakes are suite::UsageError naming
// the key, file or sizes, so that nothing is written or submitted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace launch {

// One gpt-train flag: `--key value`, or a bare `--key` when value is "true" (false: left out).
struct Setting {
  std::string key, value;
};

struct Preset {
  std::string name, path, description;
  int nodes = 1, gpus_per_node = 8;
  std::string time;
  std::vector<Setting> train;  // in the file's order

  const Setting* find(std::string_view key) const;
  std::string get(std::string_view key, std::string fallback = "") const;
  // The value as a number; UsageError naming the file and key when it is not one.
  long get_int(std::string_view key, long fallback) const;
  double get_real(std::string_view key, double fallback) const;
  // Sets (or adds) a flag; UsageError when it is not a gpt-train flag.
  void set(const std::string& key, const std::string& value);
  void erase(std::string_view key);
};

// Whether `key` names a gpt-train flag (those of today's gpt-train and the parallel-layout flags
// the presets carry before gpt-train accepts them).
bool is_train_flag(std::string_view key);

// NAME (presets_dir/NAME.yaml) or a path to a YAML file.
Preset load_preset(const std::string& name_or_path, const std::string& presets_dir);
// Names of the presets in a folder, sorted.
std::vector<std::string> list_presets(const std::string& presets_dir);
// "KEY=VALUE" from --set.
void apply_override(Preset& p, const std::string& assignment);

// One component of the job: all nodes of a job, or one part of a heterogeneous job (a GPU type).
struct Component {
  std::string gpu_type;  // empty: any GPU
  int nodes = 1;
};

struct Cluster {
  std::string partition, account, time;
  int gpus_per_node = 0;  // 0: not set
  int cpus_per_task = 0;  // 0: not set
  std::string container_image, container_mounts;  // pyxis/enroot (srun --container-image)
  std::vector<std::string> sbatch_lines;  // extra "#SBATCH ..." options, without the prefix
};

// Fields: partition, time, gpus-per-node (required); account, cpus-per-task, container-image,
// container-mounts, sbatch (a list) (optional).
Cluster load_cluster(const std::string& path);

// The parallel layout: world = sum of nodes x gpus per node; data parallel = world / (T x P).
struct Layout {
  int nodes = 1, gpus_per_node = 1, world = 1, tp = 1, pp = 1, dp = 1;
  std::vector<Component> components;  // more than one: a heterogeneous job
};
// Refuses (UsageError naming the sizes) a layout whose T x P does not divide the GPUs, or whose
// global batch is not a multiple of micro-batch x data-parallel size.
Layout make_layout(const Preset& p, const std::vector<Component>& components, int gpus_per_node);

}  // namespace launch
