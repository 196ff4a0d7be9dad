#include "train/loop/profile_layers.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <functional>
#include <cstring>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>

#include "common/cli/error.h"
#include "common/cli/numbers.h"
#include "common/io/atomic_file.h"
#include "train/backend/backend.h"
#include "train/backend/cpu/parallel.h"
#include "train/dist/launch_env.h"
#include "train/dist/process_groups.h"
#include "train/dist/rendezvous.h"
#include "train/dist/tcp_communicator.h"
#include "train/dist/watchdog.h"
#include "train/model/init.h"
#include "train/plan/bandwidth.h"
#ifdef GPT_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef GPT_HAVE_NCCL
#include "train/dist/nccl_communicator.h"
#endif

namespace po = boost::program_options;

namespace gpt {
namespace {

// Micro-batches timed back to back in one loop (each its own stage slot), and loops per figure
// (the fastest is kept: the least disturbed by other work on the machine).
constexpr int kSlots = 4, kLoops = 3, kWarmup = 2;
// The model the stages cut: embedding, layers 1..2 for the middle stages, head after kLayers.
constexpr int kLayers = 4;

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string num(double v) {
  std::ostringstream o;
  o << std::setprecision(6) << v;
  return o.str();
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::vector<int> micro_batches(const TrainArgs& a) {
  return a.profile_micro_batch_sizes.empty() ? std::vector<int>{a.micro_batch_size}
                                             : a.profile_micro_batch_sizes;
}
std::vector<int> tensor_sizes(const TrainArgs& a) {
  return a.profile_tensor_parallel_sizes.empty() ? std::vector<int>{a.layout.tensor}
                                                 : a.profile_tensor_parallel_sizes;
}

// The GPU type a cluster file names: --profile-gpu-type, else "cpu" or the CUDA device's name
// shortened to the longest built-in type it contains ("NVIDIA H100 80GB HBM3" -> H100).
std::string gpu_type(const TrainArgs& a, double* memory_gib) {
  *memory_gib = 0;
  if (a.device != "cuda") return a.profile_gpu_type.empty() ? "cpu" : a.profile_gpu_type;
  std::string name = "cuda";
#ifdef GPT_HAVE_CUDA
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess) {
    name = p.name;
    *memory_gib = double(p.totalGlobalMem) / (1ull << 30);
  }
#endif
  if (!a.profile_gpu_type.empty()) return a.profile_gpu_type;
  auto squash = [](const std::string& s) {
    std::string o;
    for (char c : s)
      if (std::isalnum(static_cast<unsigned char>(c))) o += char(std::toupper(c));
    return o;
  };
  const std::string have = squash(name);
  std::string best;
  for (const char* t : {"A10", "RTX3090", "A100-40GB", "A100-80GB", "H100", "H200", "V100"})
    if (have.find(squash(t)) != std::string::npos && squash(t).size() > squash(best).size())
      best = t;
  return best.empty() ? name : best;
}

// What the stages share: the model (kLayers layers of the run's shape), the options, the TP group.
struct Bench {
  ModelConfig cfg;
  BackendOptions base;
  dist::Communicator* tp = nullptr;  // null at T = 1
  std::function<void(void*)> set_stream;  // NCCL: the TP group's collectives on the backend's stream
  std::vector<int> inputs, targets;
  uint64_t seed = 1234;
};

struct Timing {
  double forward_ms = 0, backward_ms = 0, memory_mb_full = 0;
};

void sync(Backend& be) {
#ifdef GPT_HAVE_CUDA
  const Backend::FlatBuffers fb = be.flat_buffers();
  if (fb.on_device) cudaStreamSynchronize(static_cast<cudaStream_t>(fb.stream));
#endif
}

// Fills a backend activation buffer with small values (bytes 0x3C: about 0.0115 in fp32 and bf16),
// so that nothing runs on denormals or NaNs.
void fill(Backend& be, void* p) {
  const size_t bytes = be.stage_activation_elements() * dist::dtype_bytes(be.stage_activation_dtype());
#ifdef GPT_HAVE_CUDA
  const Backend::FlatBuffers fb = be.flat_buffers();
  if (fb.on_device) {
    cudaMemsetAsync(p, 0x3C, bytes, static_cast<cudaStream_t>(fb.stream));
    cudaStreamSynchronize(static_cast<cudaStream_t>(fb.stream));
    return;
  }
#endif
  std::memset(p, 0x3C, bytes);
}

// Times one stage: kWarmup forward+backward pairs, then kLoops times kSlots forwards followed by
// their kSlots backwards, each loop between stream synchronisations. The slowest TP rank's times.
Timing time_stage(Bench& b, const StageSpec& stage, int slots, bool recompute, bool timed) {
  BackendOptions o = b.base;
  o.stage = stage;
  o.tp_comm = b.tp;
  o.pipeline_slots = slots;
  o.recompute_activations = recompute;
  const ParamLayout layout(b.cfg, stage);
  auto be = make_backend(b.cfg, layout, o);
  if (b.set_stream) b.set_stream(be->flat_buffers().stream);
  {
    std::vector<float> params(layout.total());
    init_parameters(params.data(), b.cfg, layout, b.seed);
    be->set_params(params.data());
  }
  const bool first = stage.has_embedding, last = stage.has_head;
  for (int i = 0; i < be->stage_buffer_count(); ++i) fill(*be, be->stage_buffer(i));
  void* act_in = first ? nullptr : be->stage_buffer(0);
  void* act_out = last ? nullptr : be->stage_buffer(1);
  void* dact_out = last ? nullptr : be->stage_buffer(2);
  void* dact_in = first ? nullptr : be->stage_buffer(3);
  const float weight = 1.0f / float(b.inputs.size());
  uint64_t key = 1;
  auto forward = [&](int slot) {
    be->set_dropout_key(key++);
    be->stage_forward(slot, b.inputs.data(), b.targets.data(), act_in, act_out);
  };
  auto backward = [&](int slot) { be->stage_backward(slot, dact_out, dact_in, weight); };
  Timing t;
  if (!timed) {  // memory only: every slot holds its activations
    for (int s = 0; s < slots; ++s) forward(s);
    sync(*be);
    t.memory_mb_full = be->memory().allocated_mb;
    for (int s = 0; s < slots; ++s) backward(s);
    sync(*be);
    return t;
  }
  for (int w = 0; w < kWarmup; ++w) {
    forward(0);
    backward(0);
  }
  sync(*be);
  t.forward_ms = t.backward_ms = 1e300;
  for (int loop = 0; loop < kLoops; ++loop) {
    if (b.tp) dist::host_all_reduce_max(*b.tp, 0);  // start together
    const double t0 = now_ms();
    for (int s = 0; s < slots; ++s) forward(s);
    sync(*be);
    const double t1 = now_ms();
    if (loop == 0) t.memory_mb_full = be->memory().allocated_mb;
    for (int s = 0; s < slots; ++s) backward(s);
    sync(*be);
    const double t2 = now_ms();
    double f = (t1 - t0) / slots, bw = (t2 - t1) / slots;
    if (b.tp) {
      f = dist::host_all_reduce_max(*b.tp, f);
      bw = dist::host_all_reduce_max(*b.tp, bw);
    }
    t.forward_ms = std::min(t.forward_ms, f);
    t.backward_ms = std::min(t.backward_ms, bw);
  }
  be->zero_grad();
  return t;
}

// One AdamW step over a two-layer stage, per 1e9 parameters.
double optimizer_ms_per_gparam(Bench& b, const StageSpec& stage) {
  BackendOptions o = b.base;
  o.stage = stage;
  o.tp_comm = b.tp;
  const ParamLayout layout(b.cfg, stage);
  auto be = make_backend(b.cfg, layout, o);
  AdamWConfig ac;
  be->adamw_step(ac, 1e-4f, 1, 1.0f);
  sync(*be);
  double best = 1e300;
  for (int loop = 0; loop < kLoops; ++loop) {
    const double t0 = now_ms();
    be->adamw_step(ac, 1e-4f, 2 + loop, 1.0f);
    sync(*be);
    best = std::min(best, now_ms() - t0);
  }
  return best / (double(layout.total()) / 1e9);
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o + "\"";
}

std::string part(const Timing& t) {
  return "{\"forward-ms\": " + num(t.forward_ms) + ", \"backward-ms\": " + num(t.backward_ms) + "}";
}

// "1,2,4" (or "1 2 4") -> {1, 2, 4}, each a positive integer.
std::vector<int> int_list(const std::vector<std::string>& words, const char* flag) {
  std::vector<int> out;
  for (std::string w : words) {
    std::replace(w.begin(), w.end(), ',', ' ');
    std::istringstream in(w);
    std::string item;
    while (in >> item) {
      const std::optional<int> v = suite::parse_number<int>(item);
      if (!v || *v < 1)
        throw suite::UsageError(std::string(flag) + ": '" + item + "' is not a positive integer");
      out.push_back(*v);
    }
  }
  return out;
}

struct World {
  std::unique_ptr<dist::Rendezvous> rv;
  std::unique_ptr<dist::Communicator> comm;
  std::unique_ptr<dist::Watchdog> watchdog;
  dist::GroupFactory make_group;
  int rank = 0, size = 1, device = 0;
};

}  // namespace

void add_profile_layers_options(po::options_description& o, TrainArgs& a) {
  o.add_options()
      ("profile-layers", po::value(&a.profile_layers)->value_name("OUT.json"),
       "measure instead of training: forward/backward ms of the embedding, one layer and the "
       "output layer and the activations per layer (gpt-plan --profiles reads OUT.json); with "
       "several ranks also the node's bandwidths (OUT.bandwidth.json)")
      ("profile-micro-batch-sizes",
       po::value<std::vector<std::string>>()->multitoken()->value_name("B,B,...")->notifier(
           [&a](const std::vector<std::string>& v) {
             a.profile_micro_batch_sizes = int_list(v, "--profile-micro-batch-sizes");
           }),
       "micro-batch sizes to profile (default: --micro-batch-size)")
      ("profile-tensor-parallel-sizes",
       po::value<std::vector<std::string>>()->multitoken()->value_name("T,T,...")->notifier(
           [&a](const std::vector<std::string>& v) {
             a.profile_tensor_parallel_sizes = int_list(v, "--profile-tensor-parallel-sizes");
           }),
       "tensor-parallel sizes to profile, each <= the ranks (default: "
       "--tensor-model-parallel-size)")
      ("profile-gpu-type", po::value(&a.profile_gpu_type),
       "the GPU type the profile names (default: cpu, or the CUDA device's type such as H100)");
}

const char* profile_layers_example() {
  return "Example (layer profiles for gpt-plan: GPT-2 350M on two GPUs, then the plan):\n"
         "  gpt-train --profile-layers h100-350m.json --profile-micro-batch-sizes 4,8 \\\n"
         "    --profile-tensor-parallel-sizes 1,2 --nproc-per-node 2 --device cuda --bf16 \\\n"
         "    --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 \\\n"
         "    --max-position-embeddings 1024 --vocab-size 50257 --mock-data --lr 1e-4 \\\n"
         "    --train-iters 1\n"
         "  gpt-plan --model gpt2-350m --global-batch-size 64 --cluster cluster.yaml \\\n"
         "    --profiles h100-350m.json\n";
}

std::string bandwidth_path(const std::string& p) {
  const std::string ext = ".json";
  if (p.size() > ext.size() && p.compare(p.size() - ext.size(), ext.size(), ext) == 0)
    return p.substr(0, p.size() - ext.size()) + ".bandwidth.json";
  return p + ".bandwidth.json";
}

void check_profile_layers(const TrainArgs& a, int world_size) {
  auto usage = [](bool ok, const std::string& m) {
    if (!ok) throw suite::UsageError(m);
  };
  usage(a.vocab_size > 0, "--profile-layers needs --vocab-size (the model's vocabulary)");
  for (int b : micro_batches(a))
    usage(b >= 1, "--profile-micro-batch-sizes: sizes must be >= 1, got " + std::to_string(b));
  for (int t : tensor_sizes(a)) {
    usage(t >= 1, "--profile-tensor-parallel-sizes: sizes must be >= 1, got " + std::to_string(t));
    usage(t <= world_size, "--profile-tensor-parallel-sizes " + std::to_string(t) + " needs at least " +
                               std::to_string(t) + " ranks (--nproc-per-node " + std::to_string(t) +
                               "), this job has " + std::to_string(world_size));
    usage(a.model.num_heads % t == 0 && a.model.ffn_hidden_size % t == 0,
          "--profile-tensor-parallel-sizes " + std::to_string(t) +
              " does not divide --num-attention-heads " + std::to_string(a.model.num_heads) +
              " and --ffn-hidden-size " + std::to_string(a.model.ffn_hidden_size));
  }
}

void run_profile_layers(const TrainArgs& a, std::ostream& log) {
  const dist::LaunchInfo li = dist::discover_launch(a.launch);
  check_profile_layers(a, li.world_size);
  const bool nccl = a.device == "cuda" && li.distributed();
  // CPU times scale with the threads: the profile measures at the count the training run uses.
  if (a.cpu_threads > 0) cpu::set_num_threads(a.cpu_threads);
  World w;
  w.rank = li.rank;
  w.size = li.world_size;
  if (a.device == "cuda") select_cuda_device(li.local_rank, li.local_world_size, &w.device);
  if (li.distributed()) {
    dist::RendezvousOptions ro;
    ro.timeout_s = a.distributed_timeout_minutes * 60.0;
    ro.config = {{"profile-layers", a.profile_layers},
                 {"device", a.device},
                 {"micro-batch-sizes", join(micro_batches(a))},
                 {"tensor-parallel-sizes", join(tensor_sizes(a))}};
#ifdef GPT_HAVE_NCCL
    if (nccl) {
      dist::default_nccl_environment();
      if (li.rank == 0) ro.nccl_id = dist::NcclCommunicator::make_unique_id();
    }
#else
    if (nccl) throw suite::ToolError("--device cuda with several ranks: built without NCCL");
#endif
    w.rv = dist::Rendezvous::join(li, ro);
#ifdef GPT_HAVE_NCCL
    if (nccl) {
      w.comm = std::make_unique<dist::NcclCommunicator>(w.rv->nccl_id(), li.rank, li.world_size,
                                                        w.device, nullptr, ro.timeout_s);
      w.make_group = dist::nccl_group_factory(w.rv->store(), w.device, ro.timeout_s);
    }
#endif
    if (!nccl) {
      w.comm = std::make_unique<dist::TcpCommunicator>(*w.rv);
      w.make_group = dist::tcp_group_factory(w.rv->store(), w.rv->hosts(), ro.timeout_s);
    }
    dist::WatchdogOptions wo;
    wo.timeout_s = ro.timeout_s;
    wo.store_is_rank0 = !li.agent_store;
    w.watchdog = dist::Watchdog::start(*w.rv, w.comm.get(), wo);
  }
  const bool speaks = w.rank == 0;
  double memory_gib = 0;
  const std::string gpu = gpu_type(a, &memory_gib);
  if (speaks)
    log << "gpt-train: profiling layers on " << w.size << " rank" << (w.size == 1 ? "" : "s")
        << " (" << a.device << ", " << gpu << "): micro-batch sizes " << join(micro_batches(a))
        << ", tensor-parallel sizes " << join(tensor_sizes(a)) << "\n";

  std::string entries;
  double optimizer_ms = -1;
  for (int T : tensor_sizes(a)) {
    // The first T ranks form the group; the others wait at the barrier below.
    std::unique_ptr<dist::Communicator> group;
    std::vector<int> members;
    for (int r = 0; r < T; ++r) members.push_back(r);
    const bool member = w.rank < T;
    if (T > 1 && member)
      group = w.make_group(dist::group_name("profile-tp", members), members, w.rank);
    if (member) {
      Bench b;
      b.cfg = a.model;
      b.cfg.num_layers = kLayers;
      b.cfg.vocab_size = a.vocab_size;
      b.cfg.padded_vocab_size = pad_vocab(a.vocab_size, T, a.make_vocab_size_divisible_by);
      b.tp = group.get();
      b.seed = a.seed;
#ifdef GPT_HAVE_NCCL
      if (nccl && group) {
        auto* g = static_cast<dist::NcclCommunicator*>(group.get());
        b.set_stream = [g](void* s) { g->set_stream(static_cast<cudaStream_t>(s)); };
      }
#endif
      BackendOptions& o = b.base;
      o.device = a.device;
      o.bf16 = a.bf16;
      o.fp16 = a.fp16;
      o.recompute_gelu_layers = a.recompute_gelu_layers;
      o.classifier_rows = a.classifier_rows;
      o.hidden_dropout = a.hidden_dropout;
      o.attention_dropout = a.attention_dropout;
      o.kernels = a.kernels;
      for (int B : micro_batches(a)) {
        o.micro_batch = B;
        const size_t n = size_t(B) * b.cfg.seq_length;
        b.inputs.resize(n);
        b.targets.resize(n);
        for (size_t i = 0; i < n; ++i) {
          b.inputs[i] = int((i * 7919 + 13) % size_t(a.vocab_size));
          b.targets[i] = int((i * 104729 + 7) % size_t(a.vocab_size));
        }
        auto spec = [&](int first, int layers, bool emb, bool head) {
          StageSpec s;
          s.first_layer = first;
          s.num_layers = layers;
          s.has_embedding = emb;
          s.has_head = head;
          s.tp_size = T;
          s.tp_rank = w.rank;
          s.sequence_parallel = T > 1 && a.parallel.sequence_parallel;  // the flag as given
          return s;
        };
        const std::string what = "micro-batch " + std::to_string(B) + ", T=" + std::to_string(T);
        auto say = [&](const std::string& name, const Timing& t) {
          if (speaks)
            log << "gpt-train: profile " << what << ": " << name << " forward " << num(t.forward_ms)
                << " ms, backward " << num(t.backward_ms) << " ms\n";
        };
        const Timing emb = time_stage(b, spec(0, 0, true, false), kSlots, false, true);
        say("embedding", emb);
        const Timing one = time_stage(b, spec(1, 1, false, false), kSlots, false, true);
        say("1 layer", one);
        const Timing two = time_stage(b, spec(1, 2, false, false), kSlots, false, true);
        say("2 layers", two);
        const Timing head = time_stage(b, spec(kLayers, 0, false, true), kSlots, false, true);
        say("output layer", head);
        // One layer: what the second adds (the stage's fixed costs cancel); where timing noise
        // makes that not positive, half of the two-layer stage.
        Timing layer;
        layer.forward_ms = two.forward_ms - one.forward_ms;
        layer.backward_ms = two.backward_ms - one.backward_ms;
        if (!(layer.forward_ms > 0)) layer.forward_ms = two.forward_ms / 2;
        if (!(layer.backward_ms > 0)) layer.backward_ms = two.backward_ms / 2;
        // Saved activations per layer and micro-batch: the memory with every slot full, less the
        // same stage's with one slot, per extra slot, of two layers less one layer.
        auto act_bytes = [&](bool recompute) {
          const double one_full = time_stage(b, spec(1, 1, false, false), kSlots, recompute, false).memory_mb_full;
          const double one_single = time_stage(b, spec(1, 1, false, false), 1, recompute, false).memory_mb_full;
          const double two_full = time_stage(b, spec(1, 2, false, false), kSlots, recompute, false).memory_mb_full;
          const double two_single = time_stage(b, spec(1, 2, false, false), 1, recompute, false).memory_mb_full;
          const double mb = ((two_full - two_single) - (one_full - one_single)) / (kSlots - 1);
          return mb * 1024 * 1024;
        };
        const double act = act_bytes(false), act_rc = act_bytes(true);
        const double layer_params = double(ParamLayout(b.cfg, spec(1, 2, false, false)).total() -
                                           ParamLayout(b.cfg, spec(1, 1, false, false)).total());
        const double weight_bytes = layer_params * (4 + (a.bf16 || a.fp16 ? 2 : 0));
        if (speaks)
          log << "gpt-train: profile " << what << ": layer " << num(layer.forward_ms) << " + "
              << num(layer.backward_ms) << " ms, activations " << num(act / 1048576) << " MiB ("
              << num(act_rc / 1048576) << " MiB recomputed), weights " << num(weight_bytes / 1048576)
              << " MiB\n";
        if (optimizer_ms < 0 && T == 1) optimizer_ms = optimizer_ms_per_gparam(b, spec(1, 2, false, false));
        std::string e = "{\"micro-batch-size\": " + std::to_string(B) +
                        ", \"tensor-model-parallel-size\": " + std::to_string(T) +
                        ",\n     \"embedding\": " + part(emb) + ",\n     \"layer\": " + part(layer) +
                        ",\n     \"output-layer\": " + part(head) +
                        ",\n     \"one-layer-stage\": " + part(one) +
                        ", \"two-layer-stage\": " + part(two) + ",\n     ";
        if (act > 0) e += "\"layer-activation-bytes\": " + num(std::round(act)) + ", ";
        if (act_rc > 0) e += "\"layer-activation-bytes-recompute\": " + num(std::round(act_rc)) + ", ";
        e += "\"layer-weight-bytes\": " + num(weight_bytes) +
             ", \"includes-tp-communication\": " + std::string(T > 1 ? "true" : "false") + "}";
        entries += (entries.empty() ? "" : ",\n    ") + e;
      }
    }
    if (w.comm) dist::host_all_reduce_max(*w.comm, 0);  // the next size starts together
  }

  std::string bandwidth_file;
  if (w.comm) {
    plan::BandwidthOptions bo;
    bo.device = a.device;
    bo.sizes = {16u << 20, 64u << 20};
    const std::string text = plan::measure_bandwidths(*w.comm, w.rv->hosts(), bo, log);
    if (speaks) {
      bandwidth_file = bandwidth_path(a.profile_layers);
      suite::AtomicFile f(bandwidth_file);
      f.write(text.data(), text.size());
      f.commit();
      log << "gpt-train: wrote " << bandwidth_file << "\n";
    }
  }
  if (speaks) {
    const ModelConfig& m = a.model;
    std::string text = "{\"format\": \"gpt-layer-profile\", \"version\": 1, \"gpu\": " + json_string(gpu);
    if (memory_gib > 0) text += ", \"memory-gib\": " + num(memory_gib);
    if (optimizer_ms > 0) text += ",\n \"optimizer-ms-per-billion-parameters\": " + num(optimizer_ms);
    text += ",\n \"model\": {\"num-layers\": " + std::to_string(m.num_layers) +
            ", \"hidden-size\": " + std::to_string(m.hidden_size) +
            ", \"num-attention-heads\": " + std::to_string(m.num_heads) +
            ", \"ffn-hidden-size\": " + std::to_string(m.ffn_hidden_size) +
            ", \"seq-length\": " + std::to_string(m.seq_length) +
            ", \"vocab-size\": " + std::to_string(a.vocab_size) + ", \"precision\": \"" +
            (a.bf16 ? "bf16" : "fp32") + "\"},\n \"device\": \"" + a.device + "\", \"ranks\": " +
            std::to_string(w.size);
    if (a.device == "cpu") text += ", \"cpu-threads\": " + std::to_string(cpu::num_threads());
    if (!bandwidth_file.empty()) text += ", \"bandwidth-file\": " + json_string(bandwidth_file);
    text += ",\n \"entries\": [\n    " + entries + "]}\n";
    suite::AtomicFile f(a.profile_layers);
    f.write(text.data(), text.size());
    f.commit();
    log << "gpt-train: wrote " << a.profile_layers << "\n";
  }
  if (w.watchdog) w.watchdog->finish();
}

}  // namespace gpt
