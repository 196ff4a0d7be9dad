// gpt-launch status RESULTS_DIR|JOB_ID: the state, layout, per-rank progress and errors of a run.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/cli/error.h"
#include "tools/gpt-launch/subcommands.h"
#include "train/launch/status.h"

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace gpt_launch {

namespace {

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

}  // namespace

int status_main(int argc, char** argv) {
  po::options_description opts("Options of gpt-launch status");
  opts.add_options()("target", po::value<std::string>(), "results folder or job id")(
      "follow", po::bool_switch(), "refresh until the job has ended")(
      "interval", po::value<double>()->default_value(10), "seconds between refreshes with --follow")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("target", 1);
  const po::variables_map vm = parse_options(argc, argv, opts, pos);
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

}  // namespace gpt_launch
