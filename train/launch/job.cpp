#include "train/launch/job.h"

#include <yaml-cpp/yaml.h>

#include <sstream>

namespace launch {

namespace {

bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  for (char c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./=:,+@%").find(c) != std::string_view::npos))
      return true;
  return false;
}

std::string quote(const std::string& s) {
  if (!needs_quotes(s)) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The #SBATCH lines of one component of the job (all of it, or one part of a heterogeneous job).
void component_lines(std::ostream& os, const JobSpec& s, const Component& c) {
  const int g = s.layout.gpus_per_node;
  os << "#SBATCH --nodes=" << c.nodes << "\n#SBATCH --ntasks-per-node=" << g << "\n";
  if (s.device == "cuda") {
    if (c.gpu_type.empty()) os << "#SBATCH --gpus-per-node=" << g << "\n";
    else os << "#SBATCH --gres=gpu:" << c.gpu_type << ":" << g << "\n";
  }
  if (s.cluster.cpus_per_task > 0) os << "#SBATCH --cpus-per-task=" << s.cluster.cpus_per_task << "\n";
  if (!s.cluster.partition.empty()) os << "#SBATCH --partition=" << s.cluster.partition << "\n";
}

}  // namespace

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + quote(a);
  return out;
}

std::vector<std::string> train_argv(const JobSpec& spec) {
  std::vector<std::string> argv{spec.gpt_train, "--device", spec.device};
  for (const auto& s : spec.preset.train) {
    if (s.key == "device" || s.value == "false") continue;
    argv.push_back("--" + s.key);
    if (s.value == "true") continue;
    // the data paths may hold several prefixes with weights
    if (s.key == "data-path" || s.key == "train-data-path" || s.key == "valid-data-path" ||
        s.key == "test-data-path") {
      std::istringstream words(s.value);
      for (std::string w; words >> w;) argv.push_back(w);
    } else {
      argv.push_back(s.value);
    }
  }
  if (spec.mock_data) {
    argv.push_back("--mock-data");
    if (!spec.preset.find("vocab-size")) argv.insert(argv.end(), {"--vocab-size", "50257"});
  }
  return argv;
}

std::string sbatch_script(const JobSpec& s) {
  const Layout& l = s.layout;
  std::ostringstream os;
  os << "#!/usr/bin/env bash\n"
     << "# Written by gpt-launch " << s.revision << ": preset " << s.preset.name << ", " << l.nodes << " node"
     << (l.nodes == 1 ? "" : "s") << " x " << l.gpus_per_node << (s.device == "cuda" ? " GPUs" : " CPU processes")
     << " (T" << l.tp << " P" << l.pp << " D" << l.dp << ")" << (s.mock_data ? ", mock-data benchmark" : "") << ".\n"
     << "# The resolved configuration is in config.yaml, the gpt-train line in command.txt. Each rank\n"
     << "# writes logs/rank-<r>.log; gpt-train finds its rank, the world size and the master address (the\n"
     << "# first host of SLURM_STEP_NODELIST) from srun's variables. USR1 before the time limit: gpt-train\n"
     << "# saves a checkpoint and the job requeues itself until training is done.\n";
  os << "#SBATCH --job-name=" << s.name << "\n";
  if (!s.cluster.account.empty()) os << "#SBATCH --account=" << s.cluster.account << "\n";
  if (!s.cluster.time.empty()) os << "#SBATCH --time=" << s.cluster.time << "\n";
  os << "#SBATCH --signal=B:USR1@" << s.signal_seconds << "\n"
     << "#SBATCH --requeue\n#SBATCH --dependency=singleton\n#SBATCH --open-mode=append\n"
     << "#SBATCH --output=" << s.results_dir << "/logs/slurm-%j.out\n";
  for (const auto& line : s.cluster.sbatch_lines) os << "#SBATCH " << line << "\n";
  for (size_t i = 0; i < l.components.size(); i++) {
    if (i > 0) os << "#SBATCH hetjob\n";
    component_lines(os, s, l.components[i]);
  }
  os << "set -euo pipefail\ncd " << quote(s.results_dir) << "\nmkdir -p logs\n";
  std::vector<std::string> srun{"srun", "--kill-on-bad-exit=1"};
  if (l.components.size() > 1) srun.push_back("--het-group=0-" + std::to_string(l.components.size() - 1));
  if (!s.cluster.container_image.empty()) {
    srun.push_back("--container-image=" + s.cluster.container_image);
    std::string mounts = s.cluster.container_mounts;
    mounts += (mounts.empty() ? "" : ",") + s.results_dir + ":" + s.results_dir;
    srun.push_back("--container-mounts=" + mounts);
    srun.push_back("--container-workdir=" + s.results_dir);
  }
  // Ranks are numbered across the components of a heterogeneous job (SLURM_PROCID is global).
  srun.insert(srun.end(), {"bash", "-c", "exec \"$@\" >> logs/rank-$SLURM_PROCID.log 2>&1", "gpt-train"});
  std::vector<std::string> argv = train_argv(s);
  os << shell_join(srun) << " \\\n  " << shell_join(argv) << " &\n";
  os << R"(# A trapped signal interrupts `wait` at once (a foreground child would delay it to its end).
pid=$!
stop=
trap 'stop=USR1; kill -USR1 "$pid" 2>/dev/null || true' USR1
trap 'stop=TERM; kill -TERM "$pid" 2>/dev/null || true' TERM
while kill -0 "$pid" 2>/dev/null; do wait "$pid" || true; done
status=0
wait "$pid" || status=$?
if ((status != 0)) && ! [[ $stop == USR1 && $status == 138 ]]; then exit "$status"; fi
if [[ $stop == TERM ]]; then exit 0; fi
)";
  std::string save = s.preset.get("save"), iters = s.preset.get("train-iters");
  if (!save.empty() && save != "false" && !iters.empty() && iters != "false") {
    os << "done_iters=$(cat " << quote(save + "/latest_checkpointed_iteration.txt") << " 2>/dev/null || echo 0)\n"
       << "if ((done_iters < " << iters << ")); then\n"
       << "  echo \"gpt-launch job: stopped at iteration $done_iters of " << iters
       << "; requeueing job $SLURM_JOB_ID\"\n  scontrol requeue \"$SLURM_JOB_ID\"\nfi\n";
  }
  return os.str();
}

std::string resolved_yaml(const JobSpec& s) {
  const Layout& l = s.layout;
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << s.name;
  e << YAML::Key << "preset" << YAML::Value << s.preset.name;
  e << YAML::Key << "preset-file" << YAML::Value << s.preset.path;
  e << YAML::Key << "description" << YAML::Value << s.preset.description;
  e << YAML::Key << "gpt-launch" << YAML::Value << s.revision;
  e << YAML::Key << "mode" << YAML::Value << (s.mock_data ? "mock-data benchmark" : "training on data-path");
  e << YAML::Key << "device" << YAML::Value << s.device;
  e << YAML::Key << "layout" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "nodes" << YAML::Value << l.nodes;
  e << YAML::Key << "gpus-per-node" << YAML::Value << l.gpus_per_node;
  e << YAML::Key << "world-size" << YAML::Value << l.world;
  e << YAML::Key << "tensor-parallel" << YAML::Value << l.tp;
  e << YAML::Key << "pipeline-parallel" << YAML::Value << l.pp;
  e << YAML::Key << "data-parallel" << YAML::Value << l.dp;
  e << YAML::Key << "components" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : l.components) {
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "nodes" << YAML::Value << c.nodes;
    if (!c.gpu_type.empty()) e << YAML::Key << "gpu-type" << YAML::Value << c.gpu_type;
    e << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  e << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "partition" << YAML::Value << s.cluster.partition;
  e << YAML::Key << "account" << YAML::Value << s.cluster.account;
  e << YAML::Key << "time" << YAML::Value << s.cluster.time;
  if (s.cluster.cpus_per_task > 0) e << YAML::Key << "cpus-per-task" << YAML::Value << s.cluster.cpus_per_task;
  if (!s.cluster.container_image.empty()) e << YAML::Key << "container-image" << YAML::Value << s.cluster.container_image;
  if (!s.cluster.container_mounts.empty())
    e << YAML::Key << "container-mounts" << YAML::Value << s.cluster.container_mounts;
  if (!s.cluster.sbatch_lines.empty()) e << YAML::Key << "sbatch" << YAML::Value << s.cluster.sbatch_lines;
  e << YAML::EndMap;
  e << YAML::Key << "train" << YAML::Value << YAML::BeginMap;
  for (const auto& t : s.preset.train) e << YAML::Key << t.key << YAML::Value << t.value;
  if (s.mock_data) e << YAML::Key << "mock-data" << YAML::Value << "true";
  e << YAML::EndMap;
  e << YAML::EndMap;
  return std::string("# Resolved by gpt-launch: the preset with its overrides, the layout and the cluster settings.\n") +
         e.c_str() + "\n";
}

}  // namespace launch
