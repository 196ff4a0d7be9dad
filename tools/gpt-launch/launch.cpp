// gpt-launch --preset NAME ...: resolves the preset, its overrides and the cluster settings, checks
// the layout, writes the results folder and submits job.sbatch.
#include <boost/program_options.hpp>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/io/atomic_file.h"
#include "tools/gpt-launch/subcommands.h"
#include "train/launch/config.h"
#include "train/launch/job.h"

#ifndef SUITE_GIT_REV
#define SUITE_GIT_REV "unknown"
#endif

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace gpt_launch {

namespace {

const char* kUsage = R"(Usage: gpt-launch --preset NAME [options]        write a results folder and submit the job
       gpt-launch status RESULTS_DIR|JOB_ID [--follow]   per-rank progress and errors of a run
       gpt-launch estimate (--preset NAME | --params N) --tokens N --gpus N
                           (--tflops-per-gpu X | --measured FILE) [--no-recompute]
Slurm runs of gpt-train from model presets (presets/*.yaml: gpt2-124m, gpt2-350m, gpt2-774m,
gpt2-1.5b, megatron-1.7b, gpt3-126m, gpt3-5b, gpt3-20b, gpt3-40b, gpt3-175b).
)";

const char* kExamples = R"(
Examples:
  gpt-launch --preset gpt3-126m --nodes 2 --gpus-per-node 8 --set train-iters=2000 \
      --set data-path=/data/corpus_text_document --set vocab-file=gpt2-vocab.json \
      --set merge-file=gpt2-merges.txt --cluster cluster.yaml
  gpt-launch --preset gpt3-175b --nodes 4 --gpus-per-node 8 --dry-run   (mock-data benchmark)
  gpt-launch --preset gpt2-124m --het h100:1 --het a100:1 --partition gpu --time 1:00:00
  gpt-launch status results/gpt3-126m --follow
  gpt-launch estimate --params 175e9 --tokens 300e9 --gpus 1024 --tflops-per-gpu 140

Results folder (results/<name>/, --results-dir, --unique): job.sbatch, command.txt (the gpt-train
line), config.yaml (the resolved configuration), git_revision, job_id (after submission), and from
the job logs/rank-<r>.log and logs/slurm-<job>.out. Submitting again into the same folder resumes
from its checkpoints.

Cluster file (--cluster FILE, YAML; options given on the command line win):
  partition: gpu            # required
  time: "04:00:00"          # required
  gpus-per-node: 8          # required
  account: my-project       # optional
  cpus-per-task: 12         # optional
  container-image: nvcr.io#nvidia/pytorch:24.05-py3   # optional: pyxis/enroot
  container-mounts: /data:/data                        # optional
  sbatch: ["--exclusive", "--qos=normal"]              # optional: more #SBATCH lines

Notes:
  Without data-path the run is a mock-data benchmark (seeded random tokens) and says so.
  A layout whose tensor x pipeline size does not divide the GPUs is refused, naming the sizes.
  Multi-node jobs need no master address: gpt-train takes the first host of SLURM_STEP_NODELIST.
  --het TYPE:NODES (repeated) makes one heterogeneous Slurm job (#SBATCH hetjob) with ranks
  numbered across its components.
  Presets with tensor or pipeline parallel sizes above 1 (gpt3-20b, gpt3-40b, gpt3-175b) write
  --tensor-model-parallel-size / --pipeline-model-parallel-size / --sequence-parallel into the
  command; gpt-train refuses them until tensor and pipeline parallelism land.
  --device cpu runs --gpus-per-node processes per node on the CPU backend and requests no GPUs.

Exit status: 0 success, 1 failure (e.g. sbatch refused the job), 2 usage error (nothing written
or submitted).
)";

void write_file(const fs::path& path, const std::string& text) {
  suite::AtomicFile f(path.string());
  f.write(text.data(), text.size());
  f.commit();
}

void absolutize_paths(launch::Preset& p) {
  for (const char* key : {"data-path", "train-data-path", "valid-data-path", "test-data-path", "data-args-path",
                          "per-split-data-args-path", "vocab-file", "merge-file", "data-cache-path",
                          "init-from-hf"}) {
    const launch::Setting* s = p.find(key);
    if (!s) continue;
    std::istringstream words(s->value);
    std::string out;
    for (std::string w; words >> w;) {
      bool number = !w.empty() && w.find_first_not_of("0123456789.eE+-") == std::string::npos;
      out += (out.empty() ? "" : " ") + (number || fs::path(w).is_absolute() ? w : fs::absolute(w).lexically_normal().string());
    }
    p.set(key, out);
  }
}

launch::Component parse_het(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0) throw suite::UsageError("--het must be GPU_TYPE:NODES, got '" + text + "'");
  launch::Component c{text.substr(0, colon), 0};
  try {
    c.nodes = std::stoi(text.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (c.nodes < 1) throw suite::UsageError("--het must be GPU_TYPE:NODES, got '" + text + "'");
  return c;
}

}  // namespace

int launch_main(int argc, char** argv) {
  po::options_description opts("Options");
  opts.add_options()("preset", po::value<std::string>(), "preset name (presets/NAME.yaml) or a YAML file")(
      "set", po::value<std::vector<std::string>>()->composing(), "KEY=VALUE: a gpt-train flag by name (repeatable)")(
      "nodes", suite::ranged<int>(1, 100000), "nodes (default: the preset's)")(
      "gpus-per-node", suite::ranged<int>(1, 1024), "GPUs per node (default: the cluster file's, else the preset's)")(
      "gpu-type", po::value<std::string>(), "GPU type for --gres=gpu:TYPE:N")(
      "het", po::value<std::vector<std::string>>()->composing(),
      "TYPE:NODES, repeated: one heterogeneous job of these components (instead of --nodes)")(
      "cluster", po::value<std::string>(), "cluster settings (YAML; see below)")(
      "partition", po::value<std::string>(), "Slurm partition")("account", po::value<std::string>(), "Slurm account")(
      "time", po::value<std::string>(), "time limit (default: the cluster file's, else the preset's)")(
      "cpus-per-task", suite::ranged<int>(1, 4096), "CPUs per rank")(
      "container-image", po::value<std::string>(), "pyxis/enroot image for srun --container-image")(
      "container-mounts", po::value<std::string>(), "srun --container-mounts")(
      "sbatch", po::value<std::vector<std::string>>()->composing(), "one more #SBATCH option (repeatable)")(
      "device", po::value<std::string>()->default_value("cuda"), "cuda | cpu")(
      "signal-seconds", suite::ranged<int>(1, 86400)->default_value(120), "USR1 (save, requeue) this long before the time limit")(
      "name", po::value<std::string>(), "run name (default: the preset's)")(
      "results-dir", po::value<std::string>(), "results folder (default: results/<name>)")(
      "unique", po::bool_switch(), "a timestamped folder: results/<name>-YYYYmmdd-HHMMSS")(
      "dry-run", po::bool_switch(), "write the results folder but do not submit")(
      "gpt-train", po::value<std::string>(), "gpt-train binary (default: the one beside gpt-launch)")(
      "presets-dir", po::value<std::string>(), "folder of preset files (default: the repository's presets/)")(
      "list-presets", po::bool_switch(), "print the preset names and exit")("help,h", "show this help")(
      "version", "show the version");
  const po::variables_map vm = parse_options(argc, argv, opts);
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << opts << kExamples;
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "gpt-launch " << revision() << "\n";
    return 0;
  }
  std::string presets_dir = vm.count("presets-dir") ? vm["presets-dir"].as<std::string>() : default_presets_dir();
  if (vm["list-presets"].as<bool>()) {
    for (const auto& n : launch::list_presets(presets_dir)) std::cout << n << "\n";
    return 0;
  }
  if (!vm.count("preset")) throw suite::UsageError("--preset is required (gpt-launch --list-presets names them)");

  launch::JobSpec spec;
  spec.preset = launch::load_preset(vm["preset"].as<std::string>(), presets_dir);
  if (vm.count("set"))
    for (const auto& s : vm["set"].as<std::vector<std::string>>()) launch::apply_override(spec.preset, s);
  absolutize_paths(spec.preset);
  spec.device = vm["device"].as<std::string>();
  if (spec.device != "cuda" && spec.device != "cpu") throw suite::UsageError("--device must be cuda or cpu");
  spec.signal_seconds = vm["signal-seconds"].as<int>();
  spec.mock_data = !spec.preset.find("mock-data");
  for (const char* key : {"data-path", "train-data-path", "data-args-path", "per-split-data-args-path"})
    spec.mock_data = spec.mock_data && !spec.preset.find(key);

  if (vm.count("cluster")) spec.cluster = launch::load_cluster(vm["cluster"].as<std::string>());
  auto opt = [&](const char* name, std::string& field) {
    if (vm.count(name)) field = vm[name].as<std::string>();
  };
  opt("partition", spec.cluster.partition);
  opt("account", spec.cluster.account);
  opt("time", spec.cluster.time);
  opt("container-image", spec.cluster.container_image);
  opt("container-mounts", spec.cluster.container_mounts);
  if (spec.cluster.time.empty()) spec.cluster.time = spec.preset.time;
  if (vm.count("cpus-per-task")) spec.cluster.cpus_per_task = vm["cpus-per-task"].as<int>();
  if (vm.count("sbatch"))
    for (const auto& l : vm["sbatch"].as<std::vector<std::string>>()) spec.cluster.sbatch_lines.push_back(l);
  int gpus = vm.count("gpus-per-node") ? vm["gpus-per-node"].as<int>()
             : spec.cluster.gpus_per_node > 0 ? spec.cluster.gpus_per_node
                                              : spec.preset.gpus_per_node;
  if (gpus < 1) throw suite::UsageError("--gpus-per-node must be positive");
  std::vector<launch::Component> components;
  if (vm.count("het")) {
    if (vm.count("nodes")) throw suite::UsageError("--het gives the nodes of each component; leave out --nodes");
    for (const auto& h : vm["het"].as<std::vector<std::string>>()) components.push_back(parse_het(h));
  } else {
    int nodes = vm.count("nodes") ? vm["nodes"].as<int>() : spec.preset.nodes;
    if (nodes < 1) throw suite::UsageError("--nodes must be positive");
    components.push_back({vm.count("gpu-type") ? vm["gpu-type"].as<std::string>() : "", nodes});
  }
  spec.layout = launch::make_layout(spec.preset, components, gpus);
  spec.name = vm.count("name") ? vm["name"].as<std::string>() : spec.preset.name;
  if (spec.name.empty() || spec.name.find('/') != std::string::npos)
    throw suite::UsageError("--name must be a non-empty name without '/'");
  std::string dir = vm.count("results-dir") ? vm["results-dir"].as<std::string>() : "results/" + spec.name;
  if (vm["unique"].as<bool>()) {
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "-%Y%m%d-%H%M%S", std::localtime(&now));
    dir += stamp;
  }
  spec.results_dir = fs::absolute(dir).lexically_normal().string();
  spec.gpt_train = vm.count("gpt-train") ? fs::absolute(vm["gpt-train"].as<std::string>()).string()
                                         : self_dir() + "/gpt-train";
  spec.revision = revision();

  // Everything checked: write the folder, then submit.
  fs::path out(spec.results_dir);
  fs::create_directories(out / "logs");
  write_file(out / "command.txt", launch::shell_join(launch::train_argv(spec)) + "\n");
  write_file(out / "config.yaml", launch::resolved_yaml(spec));
  write_file(out / "git_revision", std::string(SUITE_GIT_REV) + "\n");
  write_file(out / "job.sbatch", launch::sbatch_script(spec));
  fs::permissions(out / "job.sbatch", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  const auto& l = spec.layout;
  std::cerr << "gpt-launch: " << spec.preset.name << ": " << l.nodes << " node" << (l.nodes == 1 ? "" : "s") << " x "
            << l.gpus_per_node << " = " << l.world << " ranks (T" << l.tp << " P" << l.pp << " D" << l.dp << ")"
            << (l.components.size() > 1 ? ", heterogeneous job" : "") << "\n";
  if (spec.mock_data)
    std::cerr << "gpt-launch: no data-path: mock-data benchmark mode (seeded random tokens; --set data-path=PREFIX "
                 "to train on data)\n";
  if (vm["dry-run"].as<bool>()) {
    std::cerr << "gpt-launch: dry run: " << (out / "job.sbatch").string() << " written, not submitted\n";
    return 0;
  }
  std::string sbatch_out;
  int rc = run_capture({"sbatch", "--parsable", "--chdir=" + spec.results_dir, (out / "job.sbatch").string()}, sbatch_out);
  std::string id = sbatch_out.substr(0, sbatch_out.find_first_of(";\n"));
  if (rc != 0 || id.empty())
    throw suite::ToolError("sbatch " + (out / "job.sbatch").string() + " failed (exit " + std::to_string(rc) + ")");
  write_file(out / "job_id", id + "\n");
  std::cout << id << "\n";
  std::cerr << "gpt-launch: submitted job " << id << "; results in " << spec.results_dir << "\n";
  return 0;
}

}  // namespace gpt_launch
