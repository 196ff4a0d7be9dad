// gpt-launch estimate: training days from tokens, parameters, GPUs and TFLOP/s per GPU, and the
// memory per GPU of a preset's layout.
#include <boost/program_options.hpp>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "common/cli/error.h"
#include "common/cli/numbers.h"
#include "tools/gpt-launch/subcommands.h"
#include "train/launch/config.h"
#include "train/launch/estimate.h"
#include "train/launch/memory.h"

namespace po = boost::program_options;

namespace gpt_launch {

namespace {

double positive_option(const po::variables_map& vm, const char* name) {
  const std::string text = vm[name].as<std::string>();
  const std::optional<double> v = suite::parse_number<double>(text);
  if (!v || !(*v > 0))
    throw suite::UsageError(std::string("--") + name + " must be a positive number, got '" + text + "'");
  return *v;
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
  std::ostringstream wts, opt, act, total;
  wts << std::fixed << std::setprecision(2) << "distributed optimizer: " << m.weights_distributed / gib;
  opt << std::fixed << std::setprecision(2) << "distributed optimizer: " << m.optimizer_distributed / gib;
  act << std::fixed << std::setprecision(2) << "with recomputation: " << m.activations_recompute / gib;
  const double all = m.weights + m.gradients + m.optimizer + m.activations + m.workspace;
  const double least =
      m.weights_distributed + m.gradients + m.optimizer_distributed + m.activations_recompute + m.workspace;
  total << std::fixed << std::setprecision(2) << "distributed optimizer and recomputation: " << least / gib;
  row("weights", m.weights, m.weights_distributed < m.weights ? wts.str() : "");
  row("gradients", m.gradients);
  row("optimizer", m.optimizer, opt.str());
  row("activations", m.activations, act.str());
  row("workspace", m.workspace);
  row("total", all, total.str());
}

}  // namespace

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
  const po::variables_map vm = parse_options(argc, argv, opts);
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
    params = positive_option(vm, "params");
    what = "--params";
  }
  double tokens = positive_option(vm, "tokens"), gpus = positive_option(vm, "gpus");
  double x = 0;
  std::string source;
  if (vm.count("measured")) {
    int n = 0;
    x = launch::measured_tflops(vm["measured"].as<std::string>(), n);
    source = "measured: mean of " + std::to_string(n) + " logged iterations of " + vm["measured"].as<std::string>();
  } else {
    x = positive_option(vm, "tflops-per-gpu");
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

}  // namespace gpt_launch
