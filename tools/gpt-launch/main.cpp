// gpt-launch: Slurm runs of gpt-train from model presets, with a results folder per run; the status
// of a run; training-time estimates (see --help).
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "common/cli/error.h"
#include "common/io/atomic_file.h"
#include "train/launch/config.h"
#include "train/launch/estimate.h"
#include "train/launch/job.h"
#include "train/launch/memory.h"
#include "train/launch/status.h"

#ifndef SUITE_VERSION
#define SUITE_VERSION "0.0.0"
#endif
#ifndef SUITE_GIT_REV
#define SUITE_GIT_REV "unknown"
#endif

namespace fs = std::filesystem;
namespace po = boost::program_options;

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

std::string self_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string default_presets_dir() {
  for (const char* rel : {"/../../presets", "/../share/webtext-to-gpt/presets", "/../presets"}) {
    fs::path p = fs::path(self_dir() + rel).lexically_normal();
    if (fs::is_directory(p)) return p.string();
  }
  return "presets";
}

void write_file(const fs::path& path, const std::string& text) {
  suite::AtomicFile f(path.string());
  f.write(text.data(), text.size());
  f.commit();
}

// Runs argv, returning its exit status and standard output.
int run_capture(const std::vector<std::string>& argv, std::string& out) {
  int pipefd[2];
  if (pipe(pipefd) != 0) throw suite::ToolError("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  char buf[4096];
  for (ssize_t n; (n = read(pipefd[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string revision() { return std::string(SUITE_VERSION) + " (" + SUITE_GIT_REV + ")"; }

// Relative file arguments are taken from the directory gpt-launch runs in; the job runs in the
// results folder.
void absolutize_paths(launch::Preset& p) {
  for (const char* key : {"data-path", "vocab-file", "merge-file", "data-cache-path", "init-from-hf"}) {
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

int launch_main(int argc, char** argv) {
  po::options_description opts("Options");
  opts.add_options()("preset", po::value<std::string>(), "preset name (presets/NAME.yaml) or a YAML file")(
      "set", po::value<std::vector<std::string>>()->composing(), "KEY=VALUE: a gpt-train flag by name (repeatable)")(
      "nodes", po::value<int>(), "nodes (default: the preset's)")(
      "gpus-per-node", po::value<int>(), "GPUs per node (default: the cluster file's, else the preset's)")(
      "gpu-type", po::value<std::string>(), "GPU type for --gres=gpu:TYPE:N")(
      "het", po::value<std::vector<std::string>>()->composing(),
      "TYPE:NODES, repeated: one heterogeneous job of these components (instead of --nodes)")(
      "cluster", po::value<std::string>(), "cluster settings (YAML; see below)")(
      "partition", po::value<std::string>(), "Slurm partition")("account", po::value<std::string>(), "Slurm account")(
      "time", po::value<std::string>(), "time limit (default: the cluster file's, else the preset's)")(
      "cpus-per-task", po::value<int>(), "CPUs per rank")(
      "container-image", po::value<std::string>(), "pyxis/enroot image for srun --container-image")(
      "container-mounts", po::value<std::string>(), "srun --container-mounts")(
      "sbatch", po::value<std::vector<std::string>>()->composing(), "one more #SBATCH option (repeatable)")(
      "device", po::value<std::string>()->default_value("cuda"), "cuda | cpu")(
      "signal-seconds", po::value<int>()->default_value(120), "USR1 (save, requeue) this long before the time limit")(
      "name", po::value<std::string>(), "run name (default: the preset's)")(
      "results-dir", po::value<std::string>(), "results folder (default: results/<name>)")(
      "unique", po::bool_switch(), "a timestamped folder: results/<name>-YYYYmmdd-HHMMSS")(
      "dry-run", po::bool_switch(), "write the results folder but do not submit")(
      "gpt-train", po::value<std::string>(), "gpt-train binary (default: the one beside gpt-launch)")(
      "presets-dir", po::value<std::string>(), "folder of preset files (default: the repository's presets/)")(
      "list-presets", po::bool_switch(), "print the preset names and exit")("help,h", "show this help")(
      "version", "show the version");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw suite::UsageError(e.what());
  }
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
  spec.mock_data = !spec.preset.find("data-path") && !spec.preset.find("mock-data");

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

// ---- status ----

std::string read_first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// "JobState=X Reason=Y ..." from scontrol, else squeue's state; empty when Slurm no longer knows it.
std::string job_state(const std::string& id, std::string& work_dir) {
  std::string out;
  if (run_capture({"scontrol", "show", "job", "-o", id}, out) == 0 && !out.empty()) {
    std::string state;
    for (const char* key : {"JobState=", "Reason=", "ExitCode=", "RunTime=", "Restarts=", "NodeList="}) {
      auto at = out.find(std::string(" ") + key);
      if (at == std::string::npos) continue;
      auto end = out.find(' ', at + 1);
      state += (state.empty() ? "" : " ") + out.substr(at + 1, end - at - 1);
    }
    auto wd = out.find(" WorkDir=");
    if (wd != std::string::npos) work_dir = out.substr(wd + 9, out.find_first_of(" \n", wd + 9) - wd - 9);
    return state;
  }
  out.clear();
  if (run_capture({"squeue", "-h", "-t", "all", "-j", id, "-o", "%T"}, out) == 0 && !out.empty())
    return "JobState=" + out.substr(0, out.find('\n'));
  return "";
}

std::string yaml_get(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto at = line.find(key + ": ");
    if (at != std::string::npos && line.find_first_not_of(' ') == at) return line.substr(at + key.size() + 2);
  }
  return "?";
}

// Prints the report; returns whether the job is still pending or running.
bool print_status(const std::string& target) {
  std::string dir, id;
  if (fs::is_directory(target)) {
    dir = target;
    id = read_first_line(fs::path(dir) / "job_id");
  } else if (!target.empty() && target.find_first_not_of("0123456789_") == std::string::npos) {
    id = target;
  } else {
    throw suite::UsageError("status: '" + target + "' is neither a results folder nor a job id");
  }
  std::string work_dir, state = id.empty() ? "" : job_state(id, work_dir);
  if (dir.empty()) {
    if (work_dir.empty()) throw suite::ToolError("status: job " + id + " is not known to Slurm (give its results folder)");
    dir = work_dir;
  }
  if (!fs::exists(fs::path(dir) / "config.yaml")) throw suite::ToolError(dir, "no config.yaml: not a gpt-launch results folder");
  std::ifstream cin(fs::path(dir) / "config.yaml");
  std::string config((std::istreambuf_iterator<char>(cin)), {});
  std::cout << "run " << yaml_get(config, "name") << " (" << dir << ")\n";
  std::cout << "job " << (id.empty() ? "not submitted (dry run)" : id) << ": "
            << (id.empty() ? "" : state.empty() ? "no longer known to slurmctld (ended a while ago)" : state) << "\n";
  std::cout << "layout: " << yaml_get(config, "nodes") << " nodes x " << yaml_get(config, "gpus-per-node")
            << " = world size " << yaml_get(config, "world-size") << " (T" << yaml_get(config, "tensor-parallel") << " P"
            << yaml_get(config, "pipeline-parallel") << " D" << yaml_get(config, "data-parallel") << "), partition "
            << yaml_get(config, "partition") << ", device " << yaml_get(config, "device") << "; model "
            << yaml_get(config, "num-layers") << " x " << yaml_get(config, "hidden-size") << ", "
            << yaml_get(config, "num-attention-heads") << " heads, sequence " << yaml_get(config, "seq-length")
            << ", micro-batch " << yaml_get(config, "micro-batch-size") << ", global batch "
            << yaml_get(config, "global-batch-size") << "; " << yaml_get(config, "mode") << "\n";
  auto ranks = launch::read_rank_logs(dir);
  // The failing ranks first, so that the first error line is the one to read.
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const launch::RankLog& a, const launch::RankLog& b) { return !a.errors.empty() && b.errors.empty(); });
  if (ranks.empty()) std::cout << "ranks: no logs/rank-*.log yet\n";
  for (const auto& r : ranks) {
    for (const auto& e : r.errors) std::cout << "rank " << r.rank << " ERROR: " << e << "\n";
  }
  for (const auto& e : launch::read_slurm_errors(dir)) std::cout << "slurm ERROR: " << e << "\n";
  for (const auto& r : ranks)
    std::cout << "rank " << r.rank << ": " << (r.last_iteration.empty() ? "no iteration yet" : r.last_iteration) << "\n";
  const launch::RankLog* logged = nullptr;
  for (const auto& r : ranks)
    if (!r.iterations.empty() && (!logged || r.rank < logged->rank)) logged = &r;
  if (logged) {
    std::cout << "iterations (rank " << logged->rank << ", last 10 logged):\n"
              << "  iteration     ms/iter    tokens/s     lm loss\n";
    size_t from = logged->iterations.size() > 10 ? logged->iterations.size() - 10 : 0;
    for (size_t i = from; i < logged->iterations.size(); i++) {
      const auto& it = logged->iterations[i];
      std::cout << std::fixed << "  " << std::setw(9) << it.iteration << std::setw(12) << std::setprecision(1) << it.ms
                << std::setw(12) << std::setprecision(0) << it.tokens_per_s << std::setw(12) << std::setprecision(4)
                << it.loss << "\n";
    }
  }
  std::cout.flush();
  // Whether the job may still change (for --follow).
  for (const char* s : {"JobState=PENDING", "JobState=RUNNING", "JobState=CONFIGURING", "JobState=COMPLETING",
                        "JobState=REQUEUE", "JobState=SUSPENDED"})
    if (state.find(s) != std::string::npos) return true;
  return false;
}

int status_main(int argc, char** argv) {
  po::options_description opts("Options of gpt-launch status");
  opts.add_options()("target", po::value<std::string>(), "results folder or job id")(
      "follow", po::bool_switch(), "refresh until the job has ended")(
      "interval", po::value<double>()->default_value(10), "seconds between refreshes with --follow")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("target", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw suite::UsageError(e.what());
  }
  if (vm.count("help")) {
    std::cout << "Usage: gpt-launch status RESULTS_DIR|JOB_ID [--follow]\n"
                 "Per rank the error lines (failing ranks first; Python-style warnings left out) and the last\n"
                 "iteration line, the job's state from scontrol/squeue, the layout and model, and the\n"
                 "iteration times and tokens/s of the last logged iterations.\n\n"
              << opts << "\nExample:\n  gpt-launch status results/gpt3-126m --follow --interval 30\n";
    return 0;
  }
  if (!vm.count("target")) throw suite::UsageError("status needs a results folder or a job id");
  std::string target = vm["target"].as<std::string>();
  bool follow = vm["follow"].as<bool>();
  double interval = vm["interval"].as<double>();
  if (interval <= 0) throw suite::UsageError("--interval must be positive");
  while (true) {
    if (follow && isatty(1)) std::cout << "\033[H\033[2J";
    bool active = print_status(target);
    if (!follow || !active) break;
    if (!isatty(1)) std::cout << "--\n";
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
  return 0;
}

// ---- estimate ----

double parse_number(const po::variables_map& vm, const char* name) {
  std::string text = vm[name].as<std::string>();
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v > 0) || !std::isfinite(v))
    throw suite::UsageError(std::string("--") + name + " must be a positive number, got '" + text + "'");
  return v;
}

// The memory per GPU of the preset's layout on `gpus` GPUs, from the CUDA backend's buffer plan.
void print_memory(const launch::Preset& p, int gpus) {
  const int tp = static_cast<int>(p.get_int("tensor-model-parallel-size", 1));
  const int pp = static_cast<int>(p.get_int("pipeline-model-parallel-size", 1));
  if (gpus % (tp * pp) != 0) {
    std::cout << "memory per GPU: not estimated (T" << tp << " x P" << pp << " does not divide " << gpus << " GPUs)\n";
    return;
  }
  const int dp = gpus / (tp * pp);
  const launch::MemoryEstimate m = launch::estimate_memory(p, tp, pp, dp);
  const double gib = 1024.0 * 1024 * 1024;
  auto row = [&](const char* what, double bytes, const std::string& note = "") {
    std::cout << "  " << std::left << std::setw(13) << what << std::right << std::setw(9) << std::fixed
              << std::setprecision(2) << bytes / gib << (note.empty() ? "" : "  " + note) << "\n";
  };
  std::cout << "memory per GPU (T" << tp << " P" << pp << " D" << dp << ", micro-batch " << p.get("micro-batch-size", "1")
            << (p.get("bf16") == "true" ? ", bf16" : "") << "; the CUDA backend's buffer plan), GiB:\n";
  std::ostringstream opt, act, total;
  opt << std::fixed << std::setprecision(2) << "distributed optimizer: " << m.optimizer_distributed / gib;
  act << std::fixed << std::setprecision(2) << "with recomputation: " << m.activations_recompute / gib;
  const double all = m.weights + m.gradients + m.optimizer + m.activations + m.workspace;
  const double least = m.weights + m.gradients + m.optimizer_distributed + m.activations_recompute + m.workspace;
  total << std::fixed << std::setprecision(2) << "distributed optimizer and recomputation: " << least / gib;
  row("weights", m.weights);
  row("gradients", m.gradients);
  row("optimizer", m.optimizer, opt.str());
  row("activations", m.activations, act.str());
  row("workspace", m.workspace);
  row("total", all, total.str());
}

int estimate_main(int argc, char** argv) {
  po::options_description opts("Options of gpt-launch estimate");
  opts.add_options()("preset", po::value<std::string>(), "model preset (parameters from its shape)")(
      "set", po::value<std::vector<std::string>>()->composing(), "KEY=VALUE override of the preset")(
      "params", po::value<std::string>(), "parameters (e.g. 175e9) instead of a preset")(
      "tokens", po::value<std::string>(), "training tokens (e.g. 300e9)")("gpus", po::value<std::string>(), "GPUs")(
      "tflops-per-gpu", po::value<std::string>(), "achieved TFLOP/s per GPU")(
      "measured", po::value<std::string>(), "gpt-train metrics file or log to take TFLOP/s per GPU from")(
      "no-recompute", po::bool_switch(), "6 instead of 8 FLOPs per parameter and token (no activation recomputation)")(
      "presets-dir", po::value<std::string>(), "folder of preset files")("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw suite::UsageError(e.what());
  }
  if (vm.count("help")) {
    std::cout << "Usage: gpt-launch estimate (--preset NAME | --params N) --tokens N --gpus N\n"
                 "                           (--tflops-per-gpu X | --measured FILE) [--no-recompute]\n"
                 "Training time = 8 x tokens x parameters / (GPUs x X x 86,400) days, X in FLOP/s per GPU (8 with\n"
                 "full activation recomputation, as in the Megatron paper; 6 without). Parameters of a preset:\n"
                 "12 L h^2 (1 + 13/(12 h) + (V + s)/(12 L h)), V the vocabulary padded to a multiple of 128.\n\n"
              << opts
              << "\nExamples:\n  gpt-launch estimate --params 175e9 --tokens 300e9 --gpus 1024 --tflops-per-gpu 140\n"
                 "      training time: 33.9 days\n"
                 "  gpt-launch estimate --preset gpt3-5b --tokens 300e9 --gpus 160 --measured metrics.jsonl\n";
    return 0;
  }
  if (vm.count("preset") == vm.count("params")) throw suite::UsageError("estimate needs one of --preset and --params");
  for (const char* need : {"tokens", "gpus"})
    if (!vm.count(need)) throw suite::UsageError(std::string("estimate needs --") + need);
  if (vm.count("tflops-per-gpu") == vm.count("measured"))
    throw suite::UsageError("estimate needs one of --tflops-per-gpu and --measured");
  double params = 0;
  std::string what;
  std::optional<launch::Preset> preset;
  if (vm.count("preset")) {
    std::string dir = vm.count("presets-dir") ? vm["presets-dir"].as<std::string>() : default_presets_dir();
    launch::Preset p = launch::load_preset(vm["preset"].as<std::string>(), dir);
    if (vm.count("set"))
      for (const auto& s : vm["set"].as<std::vector<std::string>>()) launch::apply_override(p, s);
    long div = p.get_int("make-vocab-size-divisible-by", 128) * p.get_int("tensor-model-parallel-size", 1);
    long vocab = (p.get_int("vocab-size", 50257) + div - 1) / div * div;
    params = launch::gpt_parameters(p.get_int("num-layers", 0), p.get_int("hidden-size", 0), vocab,
                                     p.get_int("max-position-embeddings", p.get_int("seq-length", 0)));
    what = "preset " + p.name;
    preset = p;
  } else {
    params = parse_number(vm, "params");
    what = "--params";
  }
  double tokens = parse_number(vm, "tokens"), gpus = parse_number(vm, "gpus");
  double x = 0;
  std::string source;
  if (vm.count("measured")) {
    int n = 0;
    x = launch::measured_tflops(vm["measured"].as<std::string>(), n);
    source = "measured: mean of " + std::to_string(n) + " logged iterations of " + vm["measured"].as<std::string>();
  } else {
    x = parse_number(vm, "tflops-per-gpu");
    source = "--tflops-per-gpu";
  }
  bool recompute = !vm["no-recompute"].as<bool>();
  double days = launch::training_days(tokens, params, gpus, x, recompute);
  std::cout << std::setprecision(4) << "parameters: " << params << " (" << what << ")\n"
            << "tokens: " << tokens << ", GPUs: " << gpus << ", " << x << " TFLOP/s per GPU (" << source << ")\n"
            << std::fixed << std::setprecision(1) << "training time: " << days << " days\n"
            << "  = " << (recompute ? 8 : 6) << " x tokens x parameters / (GPUs x X x 86,400)"
            << (recompute ? " (8: full activation recomputation)" : " (6: no recomputation)") << "\n";
  if (preset) print_memory(*preset, static_cast<int>(gpus));
  return 0;
}

int body(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "status") return status_main(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "estimate") return estimate_main(argc - 1, argv + 1);
  return launch_main(argc, argv);
}

}  // namespace

int main(int argc, char** argv) { return suite::run_tool("gpt-launch", argc, argv, body); }
