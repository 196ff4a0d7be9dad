#include "train/plan/plan_job.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <map>
#include <numeric>
#include <ostream>
#include <sstream>

#include "common/cli/error.h"
#include "common/jsonl/json_writer.h"
#include "train/plan/partition.h"

namespace plan {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

// 1234567 -> "1,234,567"
std::string grouped(double v) {
  std::string s = std::to_string(int64_t(std::llround(v))), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0 && s[i - 1] != '-') out += ',';
    out += s[i];
  }
  return out;
}

std::string joined(const std::vector<int>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + std::to_string(v[i]);
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string summary(const Prediction& p) {
  const Layout& l = p.layout;
  std::string s = "T" + std::to_string(l.tp) + " P" + std::to_string(l.pp) + " D" + std::to_string(l.dp) + ", micro-batch " +
                  std::to_string(l.micro_batch) + " (" + std::to_string(l.micro_batches) + " per step)";
  if (l.recompute) s += ", recomputation";
  if (l.distributed_optimizer) s += ", distributed optimizer";
  return s;
}

// "A100-40GB: 0,11 | A10: 8,8,8,8 | RTX3090: 5,0": the layers of consecutive stages of one type.
std::string stages_text(const Prediction& p) {
  std::string out, cur;
  std::vector<int> run;
  auto flush = [&] {
    if (!run.empty()) out += (out.empty() ? "" : " | ") + cur + ": " + joined(run, ",");
    run.clear();
  };
  for (const StagePrediction& s : p.stages) {
    if (s.gpu != cur) flush();
    cur = s.gpu;
    run.push_back(s.layers);
  }
  flush();
  return out;
}

// The largest memory per GPU of each GPU type, and its limit.
std::vector<std::pair<std::string, std::pair<double, double>>> memory_by_type(const Prediction& p) {
  std::vector<std::pair<std::string, std::pair<double, double>>> out;
  for (const StagePrediction& s : p.stages) {
    auto it = std::find_if(out.begin(), out.end(), [&](auto& e) { return e.first == s.gpu; });
    if (it == out.end()) it = out.insert(out.end(), {s.gpu, {0, s.memory_limit}});
    it->second.first = std::max(it->second.first, s.memory.total());
  }
  return out;
}

void print_layout(std::ostream& out, const PlanInputs& in, const Prediction& p, int rank) {
  out << "#" << rank << "  " << fixed(p.step_ms, 1) << " ms/step  " << grouped(p.tokens_per_s) << " tokens/s  " << summary(p);
  if (p.dollars_per_step >= 0) out << "  $" << fixed(p.dollars_per_step * 1e6 / (double(in.global_batch) * in.model.seq), 3) << " per 1M tokens";
  out << "\n    layers per stage: " << stages_text(p) << "  (bubble " << fixed(100 * p.bubble, 1) << "%)\n    memory per GPU, GiB:";
  for (const auto& [gpu, m] : memory_by_type(p)) out << "  " << gpu << " " << fixed(m.first / kGiB, 1) << " of " << fixed(m.second / kGiB, 1);
  out << "\n    gpt-train " << train_flags(in, p) << "\n    " << launch_command(in, p) << "\n";
}

void explain(std::ostream& out, const PlanInputs& in, const Prediction& p, int rank) {
  const Layout& l = p.layout;
  out << "\nlayout #" << rank << ": " << summary(p) << "\n";
  out << "  stage  GPU            layers  layer ms (TP ms)  extra ms  compute ms  p2p ms  in flight  memory GiB (w/g/opt/act/ws)   DP ms  optim ms\n";
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const StagePrediction& st = p.stages[s];
    const MemoryParts& m = st.memory;
    out << "  " << std::setw(5) << s << "  " << std::left << std::setw(13) << st.gpu << std::right << std::setw(8) << st.layers
        << std::setw(10) << fixed(st.layer_ms, 3) << " (" << fixed(st.tp_ms_per_layer, 3) << ")" << std::setw(10)
        << fixed(st.extra_ms, 3) << std::setw(12) << fixed(st.compute_ms, 2) << std::setw(8) << fixed(st.p2p_ms, 3)
        << std::setw(11) << st.in_flight << "  " << std::setw(5) << fixed(m.total() / kGiB, 2) << " ("
        << fixed(m.weights / kGiB, 2) << "/" << fixed(m.gradients / kGiB, 2) << "/" << fixed(m.optimizer / kGiB, 2) << "/"
        << fixed(m.activations / kGiB, 2) << "/" << fixed(m.workspace / kGiB, 2) << ") of " << fixed(st.memory_limit / kGiB, 1)
        << std::setw(8) << fixed(st.dp_ms, 2) << std::setw(9) << fixed(st.optimizer_ms, 2) << "\n";
  }
  double sum = 0, slowest = 0;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const double c = p.stages[s].compute_ms + (s + 1 < p.stages.size() ? p.stages[s].p2p_ms : 0);
    sum += c;
    slowest = std::max(slowest, c);
  }
  out << "  pipeline (1F1B): sum of stages " << fixed(sum, 2) << " + (m - 1 = " << l.micro_batches - 1 << ") x slowest stage "
      << fixed(slowest, 2) << " = " << fixed(p.pipeline_ms, 2) << " ms (bubble " << fixed(100 * p.bubble, 1) << "%)\n"
      << "  data-parallel gradient " << (l.distributed_optimizer ? "reduce-scatter + fp32 parameter all-gather" : "all-reduce")
      << " over D=" << l.dp << ", slowest stage: " << fixed(p.dp_ms, 2) << " ms\n"
      << "  embedding all-reduce between the first and last stage: " << fixed(p.embedding_ms, 2) << " ms\n"
      << "  optimizer step, slowest stage: " << fixed(p.optimizer_ms, 2) << " ms\n"
      << "  step: " << fixed(p.step_ms, 2) << " ms, " << grouped(p.tokens_per_s) << " tokens/s\n"
      << "  times from: " << (p.stages.empty() ? "" : p.stages[0].note) << "\n";
}

void json_layout(std::string& s, const PlanInputs& in, const Prediction& p, int rank) {
  suite::JsonObjectWriter w(s);
  const Layout& l = p.layout;
  auto num = [&](const char* k, double v) {
    std::ostringstream o;
    o << std::setprecision(10) << v;
    w.json_field(k, o.str());
  };
  num("rank", rank);
  num("step_ms", p.step_ms);
  num("tokens_per_s", p.tokens_per_s);
  num("tensor", l.tp);
  num("pipeline", l.pp);
  num("data", l.dp);
  num("micro_batch_size", l.micro_batch);
  num("micro_batches", l.micro_batches);
  w.json_field("recompute_activations", l.recompute ? "true" : "false");
  w.json_field("distributed_optimizer", l.distributed_optimizer ? "true" : "false");
  std::string part = "[" + joined(l.partition, ",") + "]";
  w.json_field("partition", part);
  std::string& st = w.begin_field("stages");
  st += '[';
  for (size_t k = 0; k < p.stages.size(); ++k) {
    const StagePrediction& x = p.stages[k];
    if (k) st += ',';
    st += "{\"gpu\":";
    suite::append_json_string(st, x.gpu);
    st += ",\"layers\":" + std::to_string(x.layers) + ",\"compute_ms\":" + fixed(x.compute_ms, 4) +
          ",\"p2p_ms\":" + fixed(x.p2p_ms, 4) + ",\"dp_ms\":" + fixed(x.dp_ms, 4) + ",\"optimizer_ms\":" +
          fixed(x.optimizer_ms, 4) + ",\"memory_bytes\":" + fixed(x.memory.total(), 0) +
          ",\"memory_limit_bytes\":" + fixed(x.memory_limit, 0) + "}";
  }
  st += ']';
  num("pipeline_ms", p.pipeline_ms);
  num("bubble", p.bubble);
  num("dp_ms", p.dp_ms);
  num("embedding_ms", p.embedding_ms);
  num("optimizer_ms", p.optimizer_ms);
  if (p.dollars_per_step >= 0) num("dollars_per_step", p.dollars_per_step);
  num("gpus", p.gpus);
  w.string_field("gpt_train_flags", train_flags(in, p));
  w.string_field("gpt_launch", launch_command(in, p));
  s += '}';
}

}  // namespace

PlanInputs make_inputs(const PlanOptions& o) {
  PlanInputs in;
  in.model = load_model_shape(o.model, o.presets_dir, o.shape);
  in.cluster = load_cluster_spec(o.cluster);
  in.global_batch = o.global_batch;
  in.grad_reduce_bf16 = o.grad_reduce_bf16;
  in.max_micro_batch = o.max_micro_batch;
  std::vector<GpuProfile> loaded;
  for (const std::string& f : o.profiles) {
    GpuProfile p = load_profile(f, in.model);
    auto same = std::find_if(loaded.begin(), loaded.end(), [&](const GpuProfile& q) { return same_gpu_type(q.gpu, p.gpu); });
    if (same == loaded.end()) {
      loaded.push_back(std::move(p));
      continue;
    }
    // Several files of one GPU type (e.g. one per micro-batch size) add up.
    for (const ProfileEntry& e : p.entries) {
      for (const ProfileEntry& q : same->entries)
        if (q.micro_batch == e.micro_batch && q.tp == e.tp)
          throw suite::ToolError(f, "a second profile of " + p.gpu + " at micro-batch " + std::to_string(e.micro_batch) +
                                        " and tensor-parallel size " + std::to_string(e.tp) + " (also in " + same->source + ")");
      same->entries.push_back(e);
    }
    same->source += ", " + f;
  }
  for (const GpuProfile& p : loaded) {
    bool used = std::any_of(in.cluster.groups.begin(), in.cluster.groups.end(),
                            [&](const NodeGroup& g) { return same_gpu_type(g.gpu, p.gpu); });
    if (!used) throw suite::UsageError("--profiles " + p.source + ": GPU type " + p.gpu + " is in no group of " + o.cluster);
  }
  for (const NodeGroup& g : in.cluster.groups) {
    auto it = std::find_if(loaded.begin(), loaded.end(), [&](const GpuProfile& p) { return same_gpu_type(p.gpu, g.gpu); });
    const GpuSpec* table = find_gpu_spec(g.gpu);
    if (it != loaded.end()) {
      in.profiles.push_back(*it);
    } else if (g.peak_tflops > 0 && g.memory_bandwidth_gbs > 0 && o.analytic) {
      in.profiles.push_back(GpuProfile::from_spec({g.gpu, g.memory_gib, g.peak_tflops, g.memory_bandwidth_gbs}, o.efficiency));
    } else if (table && o.analytic) {
      in.profiles.push_back(GpuProfile::from_spec(*table, o.efficiency));
    } else if (!table && !(g.peak_tflops > 0 && g.memory_bandwidth_gbs > 0)) {
      throw suite::ToolError(in.cluster.where(g), "unknown GPU type '" + g.gpu + "': no --profiles file names it" +
                                                       " and the built-in table has only " + known_gpu_specs() +
                                                       " (or give the group peak-tflops and memory-bandwidth-gbs with --analytic)");
    } else {
      throw suite::ToolError(in.cluster.where(g), "no profile for GPU type '" + g.gpu +
                                                       "': give --profiles FILE measured on it (gpt-train --profile-layers)," +
                                                       " or --analytic for its published speeds");
    }
    double mem = g.memory_gib > 0 ? g.memory_gib : in.profiles.back().memory_gib > 0 ? in.profiles.back().memory_gib : table ? table->memory_gib : 0;
    if (mem <= 0) throw suite::ToolError(in.cluster.where(g), "the memory of GPU type '" + g.gpu + "' is unknown: give memory-gib");
    if (mem <= o.headroom_gib)
      throw suite::ToolError(in.cluster.where(g), g.gpu + ": " + fixed(mem, 1) + " GiB leaves nothing after the --memory-headroom-gib");
    in.memory_gib.push_back(mem - o.headroom_gib);
  }
  return in;
}

std::string train_flags(const PlanInputs& in, const Prediction& p) {
  const Layout& l = p.layout;
  std::string s = "--tensor-model-parallel-size " + std::to_string(l.tp) + " --pipeline-model-parallel-size " +
                  std::to_string(l.pp);
  if (l.pp > 1) s += " --pipeline-partition " + joined(l.partition, "-");
  s += " --micro-batch-size " + std::to_string(l.micro_batch) + " --global-batch-size " + std::to_string(in.global_batch);
  if (l.distributed_optimizer) s += " --use-distributed-optimizer";
  if (l.recompute) s += " --recompute-activations";
  return s;
}

std::string launch_command(const PlanInputs& in, const Prediction& p) {
  const Layout& l = p.layout;
  const ModelShape& m = in.model;
  std::string s = "gpt-launch --preset " + (m.preset.empty() ? std::string("gpt2-124m") : m.preset);
  if (m.preset.empty())
    s += " --set num-layers=" + std::to_string(m.layers) + " --set hidden-size=" + std::to_string(m.hidden) +
         " --set num-attention-heads=" + std::to_string(m.heads) + " --set ffn-hidden-size=" + std::to_string(m.ffn);
  std::vector<int> used;
  for (int g : l.order)
    if (l.nodes[g] > 0) used.push_back(g);
  const NodeGroup& first = in.cluster.groups[used.front()];
  if (used.size() == 1) {
    s += " --nodes " + std::to_string(l.nodes[used.front()]);
  } else {
    for (int g : used) s += " --het " + lower(in.cluster.groups[g].gpu) + ":" + std::to_string(l.nodes[g]);
  }
  s += " --gpus-per-node " + std::to_string(first.gpus_per_node);
  s += " --set seq-length=" + std::to_string(m.seq) + " --set max-position-embeddings=" + std::to_string(m.max_positions);
  s += " --set tensor-model-parallel-size=" + std::to_string(l.tp) + " --set pipeline-model-parallel-size=" + std::to_string(l.pp);
  if (l.pp > 1) s += " --set pipeline-partition=" + joined(l.partition, "-");
  s += " --set micro-batch-size=" + std::to_string(l.micro_batch) + " --set global-batch-size=" + std::to_string(in.global_batch);
  if (l.distributed_optimizer) s += " --set use-distributed-optimizer=true";
  if (l.recompute) s += " --set recompute-activations=true";
  for (int g : used)
    if (in.cluster.groups[g].gpus_per_node != first.gpus_per_node)
      return s + "  # the groups differ in GPUs per node: gpt-launch takes one --gpus-per-node";
  return s;
}

int run_plan(const PlanOptions& o, std::ostream& out) {
  const PlanInputs in = make_inputs(o);
  const ModelShape& m = in.model;
  if (!o.partition.empty()) {
    const int sum = std::accumulate(o.partition.begin(), o.partition.end(), 0);
    if (sum != m.layers)
      throw suite::UsageError("--pipeline-partition sums to " + std::to_string(sum) + ", the model " + m.name + " has " +
                              std::to_string(m.layers) + " layers");
  }
  if (o.pareto && !in.cluster.priced())
    throw suite::UsageError("--pareto needs price-per-hour on every group of " + o.cluster);
  SearchOptions so;
  so.even_only = o.even_only;
  so.subsets = o.pareto;
  so.tp = o.tp;
  so.pp = o.pp;
  so.micro_batch = o.micro_batch;
  so.partition = o.partition;
  so.recompute = o.recompute;
  so.distributed_optimizer = o.distributed_optimizer;
  if (!o.partition.empty() && o.even_only) throw suite::UsageError("--even and --pipeline-partition exclude each other");
  const SearchResult res = search(in, so);
  std::string groups;
  for (const NodeGroup& g : in.cluster.groups)
    groups += (groups.empty() ? "" : ", ") + g.gpu + " " + std::to_string(g.nodes) + "x" + std::to_string(g.gpus_per_node);
  const std::string model_text = m.name + " (" + std::to_string(m.layers) + " x " + std::to_string(m.hidden) + ", " +
                                 std::to_string(m.heads) + " heads, sequence " + std::to_string(m.seq) + ", " +
                                 fixed(m.total_params() / 1e9, 2) + "B parameters)";
  if (res.evaluated == 0)
    throw suite::UsageError("no layout of the " + std::to_string(in.cluster.gpus()) + " GPUs matches the sizes asked (T x P " +
                            "dividing the GPUs, D = GPUs / (T x P) and the micro-batch dividing the global batch " +
                            std::to_string(in.global_batch) + ")");
  if (res.ranked.empty())
    throw suite::ToolError("model " + m.name + " fits nowhere on the " + std::to_string(in.cluster.gpus()) + " GPUs of " +
                           o.cluster + " (" + std::to_string(res.evaluated) + " layouts tried; e.g. " +
                           (res.example_rejection.empty() ? std::string("none was possible") : res.example_rejection) + ")");
  // The best even split (Megatron's default partition), for comparison.
  SearchOptions eo = so;
  eo.even_only = true;
  eo.partition.clear();
  const SearchResult even = o.even_only ? res : search(in, eo);
  const Prediction& best = res.ranked.front();
  std::vector<Prediction> front = o.pareto ? pareto_front(res.ranked) : std::vector<Prediction>{};
  const int shown = std::min<int>(o.top, int(res.ranked.size()));
  if (o.explain > int(res.ranked.size()))
    throw suite::UsageError("--explain " + std::to_string(o.explain) + ": only " + std::to_string(res.ranked.size()) + " layouts fit");
  if (o.json) {
    std::string s = "{\"model\":";
    suite::append_json_string(s, m.name);
    s += ",\"global_batch_size\":" + std::to_string(in.global_batch) + ",\"gpus\":" + std::to_string(in.cluster.gpus()) +
         ",\"evaluated\":" + std::to_string(res.evaluated) + ",\"fitting\":" + std::to_string(res.ranked.size()) +
         ",\"rejected_memory\":" + std::to_string(res.rejected_memory) +
         ",\"rejected_profile\":" + std::to_string(res.rejected_profile) + ",\"layouts\":[";
    for (int k = 0; k < shown; ++k) {
      if (k) s += ',';
      json_layout(s, in, res.ranked[k], k + 1);
    }
    s += "],\"best_even_split\":";
    if (even.ranked.empty()) s += "null";
    else json_layout(s, in, even.ranked.front(), 0);
    if (o.pareto) {
      s += ",\"pareto\":[";
      for (size_t k = 0; k < front.size(); ++k) {
        if (k) s += ',';
        json_layout(s, in, front[k], int(k + 1));
      }
      s += ']';
    }
    s += "}\n";
    out << s;
    return 0;
  }
  out << "model: " << model_text << ", global batch " << in.global_batch << "\n"
      << "cluster: " << o.cluster << ": " << groups << " = " << in.cluster.gpus() << " GPUs\n";
  for (size_t g = 0; g < in.cluster.groups.size(); ++g)
    out << "  " << in.cluster.groups[g].gpu << ": " << in.profiles[g].source << "; " << fixed(in.memory_gib[g], 1)
        << " GiB usable per GPU\n";
  out << "searched " << res.evaluated << " layouts: " << res.ranked.size() << " fit, " << res.rejected_memory
      << " rejected (memory or shape), " << res.rejected_profile << " without a profile entry\n\n";
  if (o.pareto) {
    out << "time against cost (each layout is cheaper per token than every faster one):\n";
    out << "  GPUs  nodes per group          ms/step    tokens/s   $/1M tokens  layout\n";
    for (const Prediction& p : front) {
      std::string nodes;
      for (size_t g = 0; g < in.cluster.groups.size(); ++g)
        nodes += (nodes.empty() ? "" : " ") + in.cluster.groups[g].gpu + ":" + std::to_string(p.layout.nodes[g]);
      out << "  " << std::setw(4) << p.gpus << "  " << std::left << std::setw(24) << nodes << std::right << std::setw(8)
          << fixed(p.step_ms, 1) << std::setw(12) << grouped(p.tokens_per_s) << std::setw(13)
          << fixed(p.dollars_per_step * 1e6 / (double(in.global_batch) * m.seq), 3) << "  " << summary(p) << ", partition "
          << joined(p.layout.partition, "-") << "\n";
    }
    out << "\n";
  }
  for (int k = 0; k < shown; ++k) print_layout(out, in, res.ranked[k], k + 1);
  if (!o.even_only) {
    if (even.ranked.empty()) {
      out << "\nno even split fits\n";
    } else {
      const Prediction& e = even.ranked.front();
      out << "\nbest even split: " << fixed(e.step_ms, 1) << " ms/step (" << summary(e) << ", partition "
          << joined(e.layout.partition, "-") << "): layout #1 is predicted " << fixed(e.step_ms / best.step_ms, 2)
          << "x as fast\n";
    }
  }
  if (o.explain > 0) explain(out, in, res.ranked[o.explain - 1], o.explain);
  return 0;
}

}  // namespace plan
