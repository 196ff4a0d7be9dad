// gpt-plan: the parallel layout (T, P, D, micro-batch, recomputation, distributed optimizer, GPU
// types per pipeline stage, stage partition) predicted fastest for a model on a (mixed) cluster,
// from measured or analytic per-layer profiles; `gpt-plan bandwidth` measures the communicator's
// bandwidths for the cluster file (see --help).
#include <filesystem>
#include <iostream>
#include <sstream>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "train/dist/local_launcher.h"
#include "train/plan/bandwidth.h"
#include "train/plan/partition.h"
#include "train/plan/plan_job.h"

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

std::string presets_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (const char* rel : {"../../presets", "../share/webtext-to-gpt/presets", "../presets"})
    if (!ec && fs::is_directory(exe / rel)) return (exe / rel).lexically_normal().string();
  return "presets";
}

std::vector<int> int_list(const po::variables_map& vm, const char* key) {
  return vm.count(key) ? vm[key].as<std::vector<int>>() : std::vector<int>{};
}

int on_off_any(const po::variables_map& vm, const char* key) {
  const std::string v = vm[key].as<std::string>();
  if (v == "on" || v == "off" || v == "any") return v == "any" ? -1 : v == "on";
  throw suite::UsageError(std::string("--") + key + " must be on, off or any, got '" + v + "'");
}

constexpr const char* kDetails = R"(Profiles (--profiles, JSON, data/README.md "Layer profiles"): per GPU type, at each micro-batch
and tensor-parallel size, forward and backward ms of the embedding, one layer and the output layer
(gpt-train --profile-layers writes them). --analytic fills GPU types without one from published
peak TFLOP/s and memory bandwidth (A10, RTX3090, A100-40GB, A100-80GB, H100, H200, V100, or the
group's peak-tflops / memory-bandwidth-gbs) at --efficiency of the peak (an MFU).
Cluster file (--cluster, YAML): groups: [{gpu, nodes, gpus-per-node, memory-gib, intra-node-gbs,
inter-node-gbs, p2p-intra-node-gbs, p2p-inter-node-gbs, bandwidth-files, price-per-hour,
peak-tflops, memory-bandwidth-gbs}], inter-group-gbs. Bandwidths in GB/s ("inf": free).
Step time = 1F1B pipeline (sum of the stages + (m - 1) x slowest stage) + data-parallel gradient
reduction + the embedding's all-reduce between first and last stage + the optimizer step.
Memory per stage: the CUDA backend's buffer plan, as gpt-launch estimate reads it.
gpt-plan bandwidth [--device cpu|cuda] [--sizes 1M,16M,64M] [--iters N] -o bw.json, run under srun,
torchrun or --nproc-per-node N: all-reduce, reduce-scatter, all-gather and send/recv bandwidths.
Exit status: 0 success, 1 bad input (unknown GPU type, missing profile, a model that fits
nowhere), 2 usage error.
)";

int bandwidth_main(int argc, char** argv) {
  suite::Cli cli({.name = "gpt-plan bandwidth",
                  .summary = "Measure the communicator's collective and point-to-point bandwidths (under srun, "
                             "torchrun or --nproc-per-node N).",
                  .example = "  gpt-plan bandwidth --nproc-per-node 8 --device cuda -o node.json\n"
                             "  srun -N 2 --ntasks-per-node 8 gpt-plan bandwidth --device cuda -o two-nodes.json",
                  .reads_text = false, .multi_input = false});
  std::string sizes;
  plan::BandwidthOptions o;
  cli.options().add_options()("device", po::value<std::string>(&o.device)->default_value("cpu"), "cpu (TCP) or cuda (NCCL)")(
      "sizes", po::value<std::string>(&sizes)->default_value("1M,16M,64M"), "bytes per collective, comma-separated")(
      "iters", suite::ranged(&o.iters, 1, 10000)->default_value(5), "timed repetitions of each")(
      "timeout-s", suite::ranged(&o.timeout_s, 1.0, 86400.0)->default_value(600.0), "the rendezvous and watchdog timeout")(
      "nproc-per-node", suite::ranged<int>(1, 4096), "start N ranks on this host")(
      "cpu-threads", suite::ranged<int>(1, 4096), "(set by the launcher)")(
      "rank", suite::ranged(&o.launch.rank, 0), "this rank (else from torchrun's or srun's variables)")(
      "world-size", suite::ranged(&o.launch.world_size, 1), "ranks")(
      "master-addr", po::value<std::string>(&o.launch.master_addr), "rendezvous host")(
      "master-port", suite::ranged(&o.launch.master_port, 1, 65535), "rendezvous port");
  const suite::CommonOptions common = cli.parse(argc, argv);
  if (o.device != "cpu" && o.device != "cuda") throw suite::UsageError("--device must be cpu or cuda, got '" + o.device + "'");
  if (!cli.has("output") || common.output == "-") throw suite::UsageError("bandwidth needs -o FILE (the measured-bandwidth file)");
  o.output = common.output;
  o.sizes.clear();
  std::stringstream ss(sizes);
  for (std::string s; std::getline(ss, s, ',');) o.sizes.push_back(plan::parse_size(s, "--sizes"));
  if (o.sizes.empty()) throw suite::UsageError("--sizes is empty");
  return plan::run_bandwidth(o, std::cerr);
}

int body(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "bandwidth") {
    // The launcher starts N copies of the whole command line, subcommand included.
    if (int n = gpt::dist::find_nproc_per_node(argc, argv)) return gpt::dist::run_local_launcher(argc, argv, n);
    return bandwidth_main(argc - 1, argv + 1);
  }
  suite::Cli cli(
      {.name = "gpt-plan",
       .summary = "Choose the parallel layout and stage partition for a model on a (mixed) cluster.",
       .example = "  gpt-plan --model gpt2-1.5b --global-batch-size 64 --cluster mixed.yaml --analytic\n"
                  "      (mixed.yaml: the cluster of scripts/bench/plan_mixed_cluster.sh, 8 A100 + 16 A10 + 8 RTX3090)\n"
                  "      #1  495.2 ms/step  132,347 tokens/s  T1 P8 D4, micro-batch 1 (16 per step), distributed optimizer\n"
                  "          layers per stage: RTX3090: 2,2 | A10: 5,5,5,5 | A100-40GB: 13,11  (bubble 36.7%)\n"
                  "          gpt-train --tensor-model-parallel-size 1 --pipeline-model-parallel-size 8 \\\n"
                  "              --pipeline-partition 2-2-5-5-5-5-13-11 --micro-batch-size 1 ...\n"
                  "  gpt-plan --model 24x2304x24 --seq-length 1024 --global-batch-size 64 --cluster h100x4.yaml \\\n"
                  "      --profiles h100.json --explain 1\n"
                  "  gpt-plan --model gpt2-1.5b --global-batch-size 64 --cluster priced.yaml --analytic --pareto",
       .reads_text = false, .multi_input = false, .has_output = false, .details = kDetails});
  plan::PlanOptions o;
  cli.options().add_options()("model", po::value<std::string>(&o.model), "a preset name or file, or LAYERSxHIDDENxHEADS (or the flags below)")(
      "presets-dir", po::value<std::string>(&o.presets_dir), "folder of presets")(
      "global-batch-size", suite::ranged(&o.global_batch, 1), "sequences per step")(
      "seq-length", suite::ranged(&o.shape.seq_length, 1), "sequence length (default: the preset's; 1024 for a shape)")(
      "num-layers", suite::ranged(&o.shape.num_layers, 1, 100000), "layers (overrides the model's)")(
      "hidden-size", suite::ranged(&o.shape.hidden_size, 1, 1000000), "hidden size (overrides the model's)")(
      "num-attention-heads", suite::ranged(&o.shape.num_attention_heads, 1, 100000), "heads (overrides the model's)")(
      "ffn-hidden-size", suite::ranged(&o.shape.ffn_hidden_size, 1, 10000000), "MLP size (default 4 x hidden)")(
      "vocab-size", suite::ranged(&o.shape.vocab_size, 1, 100000000), "vocabulary (default GPT-2's 50257)")(
      "cluster", po::value<std::string>(&o.cluster), "the cluster file (YAML)")(
      "profiles", po::value<std::vector<std::string>>(&o.profiles)->multitoken()->composing(), "layer profiles (JSON)")(
      "analytic", po::bool_switch(&o.analytic), "GPU types without a profile: from published speeds")(
      "efficiency", suite::ranged(&o.efficiency, 0.01, 1.0)->default_value(0.5), "fraction of peak TFLOP/s reached, MFU (--analytic)")(
      "memory-headroom-gib", suite::ranged(&o.headroom_gib, 0.0, 1024.0)->default_value(1.0), "kept free on every GPU")(
      "top", suite::ranged(&o.top, 1, 1000)->default_value(5), "layouts printed")(
      "explain", suite::ranged(&o.explain, 1, 1000), "the cost terms of layout N")(
      "pareto", po::bool_switch(&o.pareto), "time against cost over every choice of nodes (needs prices)")(
      "even", po::bool_switch(&o.even_only), "only Megatron's even stage split")(
      "grad-reduce-in-bf16", po::bool_switch(&o.grad_reduce_bf16), "gradients reduced in bf16 (default fp32)")(
      "tensor-model-parallel-size", po::value<std::vector<int>>()->multitoken()->composing(), "only these T")(
      "pipeline-model-parallel-size", po::value<std::vector<int>>()->multitoken()->composing(), "only these P")(
      "micro-batch-size", po::value<std::vector<int>>()->multitoken()->composing(), "only these micro-batch sizes")(
      "pipeline-partition", po::value<std::string>(), "only this partition, e.g. 0-8-8-8 (P is its length)")(
      "recompute", po::value<std::string>()->default_value("any"), "recomputation: on, off or any")(
      "distributed-optimizer", po::value<std::string>()->default_value("any"), "on, off or any")(
      "max-micro-batch-size", suite::ranged(&o.max_micro_batch, 1, 4096)->default_value(64), "largest micro-batch tried")(
      "json", po::bool_switch(&o.json), "print JSON");
  cli.parse(argc, argv);
  for (const char* need : {"global-batch-size", "cluster"})
    if (!cli.has(need)) throw suite::UsageError(std::string("--") + need + " is required");
  if (o.presets_dir.empty()) o.presets_dir = presets_dir();
  o.tp = int_list(cli.vm(), "tensor-model-parallel-size");
  o.pp = int_list(cli.vm(), "pipeline-model-parallel-size");
  o.micro_batch = int_list(cli.vm(), "micro-batch-size");
  o.recompute = on_off_any(cli.vm(), "recompute");
  o.distributed_optimizer = on_off_any(cli.vm(), "distributed-optimizer");
  if (cli.has("pipeline-partition")) o.partition = plan::parse_partition(cli.vm()["pipeline-partition"].as<std::string>());
  return plan::run_plan(o, std::cout);
}

}  // namespace

int main(int argc, char** argv) { return suite::run_tool("gpt-plan", argc, argv, body); }
