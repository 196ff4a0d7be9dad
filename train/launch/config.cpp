#include "train/launch/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <filesystem>

#include "common/cli/error.h"
#include "common/cli/numbers.h"

namespace fs = std::filesystem;

namespace launch {

namespace {

// gpt-train's flags by name; the last group is Megatron's parallel-layout flags that presets carry
// and gpt-train refuses until tensor/pipeline parallelism lands.
constexpr std::array kTrainFlags = {
    "num-layers", "hidden-size", "num-attention-heads", "ffn-hidden-size", "seq-length",
    "max-position-embeddings", "init-method-std", "hidden-dropout", "attention-dropout",
    "make-vocab-size-divisible-by", "tensor-model-parallel-size", "pipeline-model-parallel-size",
    "device", "cpu-threads", "bf16", "fp16", "loss-scale", "initial-loss-scale", "min-loss-scale",
    "loss-scale-window", "hysteresis", "recompute-activations", "recompute-granularity",
    "recompute-gelu-layers", "classifier-rows", "recompute-method", "recompute-num-layers",
    "micro-batch-size", "global-batch-size", "train-iters", "train-samples", "lr", "min-lr",
    "lr-decay-style", "lr-warmup-iters", "lr-warmup-samples", "lr-warmup-fraction", "lr-decay-iters",
    "lr-decay-samples", "weight-decay", "adam-beta1", "adam-beta2", "adam-eps", "clip-grad", "seed",
    "mock-data", "mock-data-samples", "data-path", "train-data-path", "valid-data-path",
    "test-data-path", "data-args-path", "per-split-data-args-path", "split", "mid-level-dataset-surplus", "split-rounding", "data-cache-path", "vocab-file",
    "merge-file", "tokenizer-type", "vocab-size", "eval-interval", "eval-iters", "log-interval",
    "metrics-file", "save", "save-interval", "load", "exit-interval", "exit-duration-in-mins",
    "exit-signal-handler", "export-hf", "init-from-hf", "profile", "profile-step-start",
    "profile-step-end", "profile-ranks",
    "sequence-parallel", "num-layers-per-virtual-pipeline-stage", "pipeline-partition", "use-distributed-optimizer",
    "overlap-grad-reduce", "overlap-param-gather", "distributed-timeout-minutes"};

std::string scalar(const YAML::Node& n, const std::string& file, const std::string& key) {
  if (!n.IsScalar()) throw suite::UsageError(file + ": '" + key + "' must be a single value");
  return n.Scalar();
}

int positive(const std::string& text, const std::string& what) {
  const std::optional<int> v = suite::parse_number<int>(text);
  if (!v || *v < 1) throw suite::UsageError(what + " must be a positive number, got '" + text + "'");
  return *v;
}

YAML::Node load_yaml(const std::string& path) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw suite::UsageError(path + ": cannot open");
  } catch (const YAML::Exception& e) {
    throw suite::UsageError(suite::location(path, e.mark.line + 1) + ": " + e.msg);
  }
}

}  // namespace

bool is_train_flag(std::string_view key) {
  return std::find(kTrainFlags.begin(), kTrainFlags.end(), key) != kTrainFlags.end();
}

const Setting* Preset::find(std::string_view key) const {
  for (const auto& s : train)
    if (s.key == key) return &s;
  return nullptr;
}

std::string Preset::get(std::string_view key, std::string fallback) const {
  const Setting* s = find(key);
  return s ? s->value : fallback;
}

namespace {

// The setting's value as a T, or fallback when the preset does not set it.
template <class T>
T preset_number(const Preset& p, std::string_view key, T fallback, const char* kind) {
  const Setting* s = p.find(key);
  if (!s) return fallback;
  const std::optional<T> v = suite::parse_number<T>(s->value);
  if (!v) throw suite::UsageError(p.path + ": " + std::string(key) + " must be " + kind + ", got '" + s->value + "'");
  return *v;
}

}  // namespace

long Preset::get_int(std::string_view key, long fallback) const { return preset_number(*this, key, fallback, "an integer"); }

double Preset::get_real(std::string_view key, double fallback) const { return preset_number(*this, key, fallback, "a number"); }

void Preset::set(const std::string& key, const std::string& value) {
  if (!is_train_flag(key)) throw suite::UsageError("unknown gpt-train option '" + key + "'");
  for (auto& s : train)
    if (s.key == key) {
      s.value = value;
      return;
    }
  train.push_back({key, value});
}

void Preset::erase(std::string_view key) {
  std::erase_if(train, [&](const Setting& s) { return s.key == key; });
}

std::vector<std::string> list_presets(const std::string& presets_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(presets_dir, ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Preset load_preset(const std::string& name_or_path, const std::string& presets_dir) {
  Preset p;
  bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml");
  p.path = is_path ? name_or_path : presets_dir + "/" + name_or_path + ".yaml";
  if (!fs::exists(p.path)) {
    if (is_path) throw suite::UsageError("--preset: " + p.path + ": no such file");
    std::string known;
    for (const auto& n : list_presets(presets_dir)) known += (known.empty() ? "" : ", ") + n;
    throw suite::UsageError("unknown preset '" + name_or_path + "' (presets in " + presets_dir + ": " +
                            (known.empty() ? "none" : known) + ")");
  }
  p.name = fs::path(p.path).stem().string();
  YAML::Node root = load_yaml(p.path);
  if (!root.IsMap()) throw suite::UsageError(p.path + ": not a YAML mapping");
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    if (key == "description") {
      p.description = scalar(kv.second, p.path, key);
    } else if (key == "nodes") {
      p.nodes = positive(scalar(kv.second, p.path, key), p.path + ": nodes");
    } else if (key == "gpus-per-node") {
      p.gpus_per_node = positive(scalar(kv.second, p.path, key), p.path + ": gpus-per-node");
    } else if (key == "time") {
      p.time = scalar(kv.second, p.path, key);
    } else if (key == "train") {
      if (!kv.second.IsMap()) throw suite::UsageError(p.path + ": 'train' must be a mapping of gpt-train flags");
      for (const auto& t : kv.second) {
        std::string flag = t.first.as<std::string>();
        if (!is_train_flag(flag))
          throw suite::UsageError(suite::location(p.path, t.first.Mark().line + 1) + ": unknown gpt-train option '" +
                                  flag + "'");
        p.train.push_back({flag, scalar(t.second, p.path, flag)});
      }
    } else {
      throw suite::UsageError(suite::location(p.path, kv.first.Mark().line + 1) + ": unknown field '" + key + "'");
    }
  }
  for (const char* need : {"num-layers", "hidden-size", "num-attention-heads", "seq-length", "micro-batch-size"})
    if (!p.find(need)) throw suite::UsageError(p.path + ": missing field 'train: " + std::string(need) + "'");
  return p;
}

void apply_override(Preset& p, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw suite::UsageError("--set must be KEY=VALUE, got '" + assignment + "'");
  std::string key = assignment.substr(0, eq);
  if (key.starts_with("--")) key = key.substr(2);
  p.set(key, assignment.substr(eq + 1));
}

Cluster load_cluster(const std::string& path) {
  YAML::Node root = load_yaml(path);
  if (!root.IsMap()) throw suite::UsageError(path + ": not a YAML mapping");
  Cluster c;
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    if (key == "partition") c.partition = scalar(kv.second, path, key);
    else if (key == "account") c.account = scalar(kv.second, path, key);
    else if (key == "time") c.time = scalar(kv.second, path, key);
    else if (key == "gpus-per-node") c.gpus_per_node = positive(scalar(kv.second, path, key), path + ": gpus-per-node");
    else if (key == "cpus-per-task") c.cpus_per_task = positive(scalar(kv.second, path, key), path + ": cpus-per-task");
    else if (key == "container-image") c.container_image = scalar(kv.second, path, key);
    else if (key == "container-mounts") c.container_mounts = scalar(kv.second, path, key);
    else if (key == "sbatch") {
      if (!kv.second.IsSequence()) throw suite::UsageError(path + ": 'sbatch' must be a list of sbatch options");
      for (const auto& line : kv.second) c.sbatch_lines.push_back(scalar(line, path, key));
    } else {
      throw suite::UsageError(suite::location(path, kv.first.Mark().line + 1) + ": unknown field '" + key + "'");
    }
  }
  for (auto [name, missing] : {std::pair{"partition", c.partition.empty()}, std::pair{"time", c.time.empty()},
                               std::pair{"gpus-per-node", c.gpus_per_node == 0}})
    if (missing) throw suite::UsageError(path + ": missing field '" + name + "'");
  return c;
}

Layout make_layout(const Preset& p, const std::vector<Component>& components, int gpus_per_node) {
  Layout l;
  l.components = components;
  l.gpus_per_node = gpus_per_node;
  l.nodes = 0;
  for (const auto& c : components) l.nodes += c.nodes;
  l.world = l.nodes * gpus_per_node;
  l.tp = static_cast<int>(p.get_int("tensor-model-parallel-size", 1));
  l.pp = static_cast<int>(p.get_int("pipeline-model-parallel-size", 1));
  if (l.tp < 1 || l.pp < 1) throw suite::UsageError("tensor and pipeline parallel sizes must be positive");
  std::string gpus = std::to_string(l.nodes) + " node" + (l.nodes == 1 ? "" : "s") + " x " +
                     std::to_string(gpus_per_node) + " GPUs = " + std::to_string(l.world);
  if (l.world % (l.tp * l.pp) != 0)
    throw suite::UsageError("preset " + p.name + ": tensor " + std::to_string(l.tp) + " x pipeline " +
                            std::to_string(l.pp) + " = " + std::to_string(l.tp * l.pp) + " GPUs per model copy does not divide " +
                            gpus);
  l.dp = l.world / (l.tp * l.pp);
  long mbs = p.get_int("micro-batch-size", 1), gbs = p.get_int("global-batch-size", mbs);
  if (gbs % (mbs * l.dp) != 0)
    throw suite::UsageError("preset " + p.name + ": global batch " + std::to_string(gbs) + " is not a multiple of micro-batch " +
                            std::to_string(mbs) + " x data-parallel size " + std::to_string(l.dp) + " (" + gpus + ")");
  return l;
}

}  // namespace launch
