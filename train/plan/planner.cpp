#include "train/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

#include "common/cli/error.h"
#include "train/plan/partition.h"

namespace plan {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Milliseconds to move `bytes` at `gbs` GB/s (an infinite bandwidth costs nothing).
double transfer_ms(double bytes, double gbs) { return std::isinf(gbs) ? 0 : bytes / (gbs * 1e6); }
// A ring all-reduce over n ranks at bus bandwidth gbs.
double all_reduce_ms(double bytes, int n, double gbs) { return n < 2 ? 0 : 2.0 * (n - 1) / n * transfer_ms(bytes, gbs); }
// A ring reduce-scatter or all-gather.
double half_ring_ms(double bytes, int n, double gbs) { return n < 2 ? 0 : double(n - 1) / n * transfer_ms(bytes, gbs); }

std::string gib(double bytes) {
  std::ostringstream o;
  o.precision(1);
  o << std::fixed << bytes / kGiB;
  return o.str();
}

// Where each rank of a layout runs.
struct Placement {
  std::vector<int> group, node;  // by rank
  bool ok = true;
};

Placement place(const PlanInputs& in, const Layout& l) {
  Placement p;
  int node = 0;
  for (int g : l.order)
    for (int n = 0; n < l.nodes[g]; ++n, ++node)
      for (int k = 0; k < in.cluster.groups[g].gpus_per_node; ++k) {
        p.group.push_back(g);
        p.node.push_back(node);
      }
  return p;
}

struct Memo {
  std::map<std::tuple<int, int, bool>, StageMemory> memory;
  const StageMemory& get(const ModelShape& m, int b, int tp, bool rc) {
    auto key = std::make_tuple(b, tp, rc);
    auto it = memory.find(key);
    if (it == memory.end()) it = memory.emplace(key, StageMemory(m, b, tp, rc)).first;
    return it->second;
  }
};

Prediction reject(Prediction p, std::string why) {
  p.fits = false;
  p.rejected = std::move(why);
  return p;
}

// What rejected a layout: the kinds the search counts.
bool is_profile_rejection(const Prediction& p) { return p.rejected.rfind("no profile", 0) == 0; }

Prediction predict_with(const PlanInputs& in, Layout l, Memo& memo, bool even_only) {
  Prediction out;
  const ModelShape& m = in.model;
  const Placement pl = place(in, l);
  const int world = int(pl.group.size()), T = l.tp, P = l.pp, D = l.dp, b = l.micro_batch;
  out.gpus = world;
  out.layout = l;
  if (T * P * D != world)
    return reject(out, "T x P x D = " + std::to_string(T * P * D) + " is not the " + std::to_string(world) + " GPUs");
  l.micro_batches = in.global_batch / (D * b);
  out.layout = l;
  if (l.micro_batches * D * b != in.global_batch)
    return reject(out, "global batch " + std::to_string(in.global_batch) + " is not a multiple of micro-batch x D");
  if (m.heads % T != 0) return reject(out, "T " + std::to_string(T) + " does not divide the " + std::to_string(m.heads) + " heads");
  for (int g : l.order)
    if (l.nodes[g] > 0 && in.cluster.groups[g].gpus_per_node % T != 0)
      return reject(out, "T " + std::to_string(T) + " does not divide the " + std::to_string(in.cluster.groups[g].gpus_per_node) +
                             " GPUs per node of " + in.cluster.groups[g].gpu);
  if (P > m.layers + 2) return reject(out, "more stages than the layers and the two end stages");
  const int mb = l.micro_batches, TD = T * D;
  const double act = m.activation_bytes(b);
  const StageMemory& mem = memo.get(m, b, T, l.recompute);
  std::vector<StageSpeed> speeds(P);
  out.stages.resize(P);
  for (int s = 0; s < P; ++s) {
    StagePrediction& sp = out.stages[s];
    const int first = s * TD, last = first + TD - 1;
    for (int r = first; r <= last; ++r)
      if (std::find(sp.groups.begin(), sp.groups.end(), pl.group[r]) == sp.groups.end()) sp.groups.push_back(pl.group[r]);
    double layer_ms = 0, extra_ms = 0, tp_ms = 0, measured_act = -1;
    sp.memory_limit = std::numeric_limits<double>::infinity();
    for (int g : sp.groups) {
      const NodeGroup& grp = in.cluster.groups[g];
      sp.gpu += (sp.gpu.empty() ? "" : "+") + grp.gpu;
      const auto e = in.profiles[g].entry(m, b, T);
      if (!e)
        return reject(out, "no profile entry for micro-batch " + std::to_string(b) + " at tensor-parallel size " +
                               std::to_string(T) + " for " + grp.gpu + " (" + in.profiles[g].source + ")");
      const double t_ar = T > 1 && !e->includes_tp_communication ? (l.recompute ? 6 : 4) * all_reduce_ms(act, T, grp.intra_gbs) : 0;
      const double layer = e->layer.forward_ms + e->layer.backward_ms + (l.recompute ? e->layer.forward_ms : 0) + t_ar;
      if (layer >= layer_ms) tp_ms = t_ar;
      layer_ms = std::max(layer_ms, layer);
      double extra = 0;
      if (s == 0) extra += e->embedding.forward_ms + e->embedding.backward_ms;
      if (s == P - 1) extra += e->head.forward_ms + e->head.backward_ms;
      extra_ms = std::max(extra_ms, extra);
      const double a = l.recompute ? e->layer_activation_bytes_recompute : e->layer_activation_bytes;
      if (a >= 0) measured_act = std::max(measured_act, a);
      sp.memory_limit = std::min(sp.memory_limit, in.memory_gib[g] * kGiB);
      sp.note = e->note;
    }
    sp.layer_ms = layer_ms;
    sp.tp_ms_per_layer = tp_ms;
    sp.extra_ms = extra_ms;
    sp.in_flight = std::min(P - s, mb);
    if (s + 1 < P) {
      double gbs = std::numeric_limits<double>::infinity();
      for (int r = first; r <= last; ++r) {
        const int q = r + TD, gr = pl.group[r], gq = pl.group[q];
        const double bw = pl.node[r] == pl.node[q] ? in.cluster.groups[gr].p2p_intra_gbs
                          : gr == gq              ? in.cluster.groups[gr].p2p_inter_gbs
                                                  : in.cluster.between_groups_gbs(gr, gq);
        gbs = std::min(gbs, bw);
      }
      sp.p2p_ms = 2 * transfer_ms(act, gbs);
    }
    const int shards = l.distributed_optimizer ? D : 1;
    const double empty = mem.stage(0, sp.in_flight, shards, measured_act).total();
    const double one = mem.stage(1, sp.in_flight, shards, measured_act).total();
    int cap = empty > sp.memory_limit ? -1 : int(std::min<double>(m.layers, std::floor((sp.memory_limit - empty) / (one - empty))));
    speeds[s] = {layer_ms, extra_ms, sp.p2p_ms, cap};
    sp.measured_activation = measured_act;
  }
  if (l.partition.empty()) {
    l.partition = even_only ? even_partition(P, m.layers) : balanced_partition(speeds, m.layers, mb);
    if (l.partition.empty() && even_only && m.layers % P != 0)
      return reject(out, "an even split needs P to divide the " + std::to_string(m.layers) + " layers");
  }
  out.layout = l;
  if (l.partition.empty() || int(l.partition.size()) != P ||
      std::accumulate(l.partition.begin(), l.partition.end(), 0) != m.layers) {
    if (!l.partition.empty() && std::accumulate(l.partition.begin(), l.partition.end(), 0) != m.layers)
      return reject(out, "the partition does not sum to the " + std::to_string(m.layers) + " layers");
    // The stage that cannot take even its smallest share names the memory it lacks.
    for (int s = 0; s < P; ++s) {
      const StagePrediction& sp = out.stages[s];
      const int shards = l.distributed_optimizer ? D : 1;
      const int least = P == 1 ? m.layers : (s == 0 || s == P - 1) ? 0 : 1;
      const int share = std::max(least, P == 1 ? m.layers : m.layers / P);
      const double need = mem.stage(share, sp.in_flight, shards, sp.measured_activation).total();
      if (speeds[s].max_layers < least || need > sp.memory_limit)
        return reject(out, "does not fit in memory: stage " + std::to_string(s) + " on " + sp.gpu + " needs " + gib(need) +
                               " GiB for " + std::to_string(share) + " layers, has " + gib(sp.memory_limit));
    }
    return reject(out, "does not fit in memory");
  }
  for (int s = 0; s < P; ++s) {
    const int k = l.partition[s];
    if (k < ((P > 1 && (s == 0 || s == P - 1)) ? 0 : 1)) return reject(out, "stage " + std::to_string(s) + " holds no layer");
    if (k > speeds[s].max_layers)
      return reject(out, "does not fit in memory: stage " + std::to_string(s) + " on " + out.stages[s].gpu + " with " +
                             std::to_string(k) + " layers needs more than " + gib(out.stages[s].memory_limit) + " GiB");
  }
  out.pipeline_ms = pipeline_ms(speeds, l.partition, mb);
  const double grad_bytes = in.grad_reduce_bf16 ? 2 : 4;
  double compute_sum = 0;
  for (int s = 0; s < P; ++s) {
    StagePrediction& sp = out.stages[s];
    const int k = sp.layers = l.partition[s];
    sp.compute_ms = k * sp.layer_ms + sp.extra_ms;
    compute_sum += sp.compute_ms;
    sp.params = k * m.layer_params() + (s == 0 ? m.embedding_params(T) : 0) +
                (s == P - 1 ? m.head_params() + (P > 1 ? double(m.padded_vocab(T)) * m.hidden : 0) : 0);
    sp.memory = mem.stage(k, sp.in_flight, l.distributed_optimizer ? D : 1, sp.measured_activation);
    const int first = s * TD, last = first + TD - 1;
    double dp_gbs = std::numeric_limits<double>::infinity(), rs_gbs = dp_gbs, ag_gbs = dp_gbs;
    if (pl.node[first] == pl.node[last]) {
      const NodeGroup& g = in.cluster.groups[pl.group[first]];
      dp_gbs = g.intra_gbs;
      rs_gbs = g.intra_reduce_scatter_gbs > 0 ? g.intra_reduce_scatter_gbs : g.intra_gbs;
      ag_gbs = g.intra_all_gather_gbs > 0 ? g.intra_all_gather_gbs : g.intra_gbs;
    } else {
      for (int a : sp.groups)
        for (int c : sp.groups) dp_gbs = std::min(dp_gbs, in.cluster.between_groups_gbs(a, c));
      rs_gbs = ag_gbs = dp_gbs;
    }
    const double shard = sp.params / T;
    // gpt-train's distributed optimizer gathers the updated fp32 master pieces (Megatron: bf16).
    sp.dp_ms = l.distributed_optimizer ? half_ring_ms(shard * grad_bytes, D, rs_gbs) + half_ring_ms(shard * 4, D, ag_gbs)
                                       : all_reduce_ms(shard * grad_bytes, D, dp_gbs);
    // AdamW reads fp32 weights, gradients and both moments and writes three of them back plus the
    // bf16 copy: about 30 bytes per parameter, at 70% of the memory bandwidth.
    const double updated = shard / (l.distributed_optimizer ? D : 1);
    for (int g : sp.groups) {
      const GpuProfile& pr = in.profiles[g];
      const double ms = pr.optimizer_ms_per_gparam >= 0 ? updated / 1e9 * pr.optimizer_ms_per_gparam
                        : pr.memory_gbs > 0           ? updated * 30 / (pr.memory_gbs * 0.7 * 1e6)
                                                      : 0;
      sp.optimizer_ms = std::max(sp.optimizer_ms, ms);
    }
    out.dp_ms = std::max(out.dp_ms, sp.dp_ms);
    out.optimizer_ms = std::max(out.optimizer_ms, sp.optimizer_ms);
  }
  if (P > 1) {
    const int r0 = 0, r1 = (P - 1) * TD;
    const int g0 = pl.group[r0], g1 = pl.group[r1];
    const double gbs = pl.node[r0] == pl.node[r1] ? in.cluster.groups[g0].intra_gbs
                       : g0 == g1                ? in.cluster.groups[g0].inter_gbs
                                                 : in.cluster.between_groups_gbs(g0, g1);
    out.embedding_ms = all_reduce_ms(double(m.padded_vocab(T)) * m.hidden / T * grad_bytes, 2, gbs);
  }
  out.bubble = out.pipeline_ms > 0 ? std::max(0.0, 1 - compute_sum * mb / (P * out.pipeline_ms)) : 0;
  out.step_ms = out.pipeline_ms + out.dp_ms + out.embedding_ms + out.optimizer_ms;
  out.tokens_per_s = out.step_ms > 0 ? double(in.global_batch) * m.seq / (out.step_ms / 1000) : 0;
  if (in.cluster.priced()) {
    double per_hour = 0;
    for (size_t g = 0; g < in.cluster.groups.size(); ++g) per_hour += l.nodes[g] * in.cluster.groups[g].price_per_hour;
    out.dollars_per_step = per_hour * out.step_ms / 3.6e6;
  }
  return out;
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

bool allowed(const std::vector<int>& only, int v) { return only.empty() || std::find(only.begin(), only.end(), v) != only.end(); }

}  // namespace

Prediction predict(const PlanInputs& in, Layout layout) {
  Memo memo;
  if (layout.nodes.empty())
    for (const NodeGroup& g : in.cluster.groups) layout.nodes.push_back(g.nodes);
  if (layout.order.empty()) {
    layout.order.resize(in.cluster.groups.size());
    std::iota(layout.order.begin(), layout.order.end(), 0);
  }
  return predict_with(in, layout, memo, false);
}

SearchResult search(const PlanInputs& in, const SearchOptions& opt) {
  SearchResult res;
  Memo memo;
  std::tuple<int, int, bool, bool> leanest{0, 0, false, false};
  const size_t G = in.cluster.groups.size();
  // Node counts per group: the whole cluster, or (--pareto) every non-empty choice.
  std::vector<std::vector<int>> choices;
  std::vector<int> counts(G, 0);
  if (!opt.subsets) {
    for (size_t g = 0; g < G; ++g) counts[g] = in.cluster.groups[g].nodes;
    choices.push_back(counts);
  } else {
    double count = 1;
    for (const NodeGroup& g : in.cluster.groups) count *= g.nodes + 1;
    if (count > 4096)
      throw suite::UsageError("--pareto would try " + std::to_string(int64_t(count) - 1) +
                              " choices of nodes per group (at most 4096): fewer groups or nodes");
    for (;;) {
      if (std::any_of(counts.begin(), counts.end(), [](int c) { return c > 0; })) choices.push_back(counts);
      size_t g = 0;
      while (g < G && counts[g] == in.cluster.groups[g].nodes) counts[g++] = 0;
      if (g == G) break;
      ++counts[g];
    }
  }
  for (const std::vector<int>& nodes : choices) {
    std::vector<int> used;
    int world = 0;
    for (size_t g = 0; g < G; ++g)
      if (nodes[g] > 0) {
        used.push_back(int(g));
        world += nodes[g] * in.cluster.groups[g].gpus_per_node;
      }
    // Distinct orders of the groups along the pipeline (groups alike in type and size once).
    std::vector<std::vector<int>> orders;
    std::set<std::vector<std::string>> seen;
    std::vector<int> perm = used;
    do {
      std::vector<std::string> key;
      for (int g : perm) {
        const NodeGroup& n = in.cluster.groups[g];
        key.push_back(n.gpu + "/" + std::to_string(n.gpus_per_node) + "/" + std::to_string(nodes[g]) + "/" +
                      std::to_string(n.intra_gbs) + "/" + std::to_string(n.inter_gbs));
      }
      if (seen.insert(key).second) orders.push_back(perm);
    } while (std::next_permutation(perm.begin(), perm.end()));
    for (int T : divisors(in.model.heads)) {
      if (!allowed(opt.tp, T)) continue;
      bool inside = true;
      for (int g : used) inside = inside && in.cluster.groups[g].gpus_per_node % T == 0;
      if (!inside) continue;
      for (int P = 1; P <= std::min(in.model.layers + 2, world / T); ++P) {
        if (world % (T * P) != 0 || !allowed(opt.pp, P)) continue;
        if (!opt.partition.empty() && int(opt.partition.size()) != P) continue;
        const int D = world / (T * P);
        if (in.global_batch % D != 0) continue;
        const int per_replica = in.global_batch / D;
        std::set<int> sizes;
        for (int g : used)
          for (int b : in.profiles[g].micro_batches(T, std::min(per_replica, in.max_micro_batch)))
            if (per_replica % b == 0 && allowed(opt.micro_batch, b)) sizes.insert(b);
        for (int b : sizes)
          for (bool rc : {false, true})
            for (bool dist : {false, true}) {
              if ((dist && D == 1) || (opt.recompute >= 0 && rc != bool(opt.recompute)) ||
                  (opt.distributed_optimizer >= 0 && dist != bool(opt.distributed_optimizer)))
                continue;
              for (size_t o = 0; o < (P == 1 ? 1 : orders.size()); ++o) {
                Layout l;
                l.tp = T;
                l.pp = P;
                l.dp = D;
                l.micro_batch = b;
                l.recompute = rc;
                l.distributed_optimizer = dist;
                l.order = orders[o];
                l.nodes = nodes;
                l.partition = opt.partition;
                Prediction p = predict_with(in, l, memo, opt.even_only);
                ++res.evaluated;
                if (p.fits) {
                  res.ranked.push_back(std::move(p));
                } else if (is_profile_rejection(p)) {
                  ++res.rejected_profile;
                  if (res.example_rejection.empty()) res.example_rejection = p.rejected;
                } else {
                  ++res.rejected_memory;
                  if (res.example_rejection.empty()) res.example_rejection = p.rejected;
                  // The example shown is the layout that needs the least memory: the most
                  // stages, the smallest micro-batch, recomputation and the distributed optimizer.
                  const auto score = std::make_tuple(P, -b, rc, dist);
                  if (p.rejected.rfind("does not fit", 0) == 0 && (res.example_rejection.empty() || score > leanest)) {
                    leanest = score;
                    res.example_rejection = "T" + std::to_string(T) + " P" + std::to_string(P) + " D" + std::to_string(D) +
                                            " micro-batch " + std::to_string(b) + (rc ? ", recomputation" : "") +
                                            (dist ? ", distributed optimizer" : "") + ": " + p.rejected;
                  }
                }
              }
            }
      }
    }
  }
  std::stable_sort(res.ranked.begin(), res.ranked.end(), [](const Prediction& a, const Prediction& b) {
    // Equal predictions (the analytic profiles scale linearly with the micro-batch) go to fewer
    // GPUs, then the larger micro-batch (fewer kernel launches than the model counts).
    if (std::abs(a.step_ms - b.step_ms) > 1e-9 * std::max(a.step_ms, b.step_ms)) return a.step_ms < b.step_ms;
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    return a.layout.micro_batch > b.layout.micro_batch;
  });
  return res;
}

std::vector<Prediction> pareto_front(const std::vector<Prediction>& ranked) {
  std::vector<Prediction> front;
  double cheapest = std::numeric_limits<double>::infinity();
  for (const Prediction& p : ranked) {  // fastest first: keep each that is cheaper than all faster ones
    if (p.dollars_per_step < 0) continue;
    if (p.dollars_per_step < cheapest - 1e-15) {
      front.push_back(p);
      cheapest = p.dollars_per_step;
    }
  }
  return front;
}

}  // namespace plan
