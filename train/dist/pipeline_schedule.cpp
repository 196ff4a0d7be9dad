#include "train/dist/pipeline_schedule.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/cli/error.h"

namespace gpt::dist {
namespace {

struct Compute {
  bool forward;
  int microbatch, chunk;
};

// The order of computations on rank pp (no transfers yet).
std::vector<Compute> compute_order(int P, int V, int m, int pp) {
  std::vector<Compute> out;
  if (V == 1) {
    const int warmup = std::min(P - pp - 1, m);
    for (int i = 0; i < warmup; ++i) out.push_back({true, i, 0});
    for (int i = 0; i < m - warmup; ++i) {
      out.push_back({true, warmup + i, 0});
      out.push_back({false, i, 0});
    }
    for (int i = m - warmup; i < m; ++i) out.push_back({false, i, 0});
    return out;
  }
  // Megatron's interleaved order: the k-th forward is micro-batch (k / (P·V))·P + k % P through
  // chunk (k / P) % V; the k-th backward the same micro-batch through chunk V - 1 - (k / P) % V.
  const int total = m * V;
  auto mb = [&](int k) { return k / (P * V) * P + k % P; };
  auto fchunk = [&](int k) { return k / P % V; };
  auto bchunk = [&](int k) { return V - 1 - k / P % V; };
  const int warmup = m == P ? total : std::min((P - pp - 1) * 2 + (V - 1) * P, total);
  for (int k = 0; k < warmup; ++k) out.push_back({true, mb(k), fchunk(k)});
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back({true, mb(warmup + k), fchunk(warmup + k)});
    out.push_back({false, mb(k), bchunk(k)});
  }
  for (int k = total - warmup; k < total; ++k) out.push_back({false, mb(k), bchunk(k)});
  return out;
}

}  // namespace

std::vector<PipeAction> pipeline_schedule(int P, int V, int m, int pp) {
  if (P < 1 || V < 1 || m < 1 || pp < 0 || pp >= P || (V > 1 && P < 3))
    throw suite::UsageError("pipeline schedule: bad shape (an internal error)");
  if (V > 1 && m % P != 0)
    throw suite::UsageError("number of microbatches (" + std::to_string(m) +
                            ") is not divisible by pipeline-model-parallel-size (" +
                            std::to_string(P) + ") when using interleaved schedule");
  const int last = P * V - 1;  // the last model stage
  const int next = (pp + 1) % P, prev = (pp + P - 1) % P;
  std::vector<PipeAction> out;
  auto compute = [&](const Compute& c) {
    PipeAction a;
    a.kind = c.forward ? PipeAction::Kind::kForward : PipeAction::Kind::kBackward;
    a.microbatch = c.microbatch;
    a.chunk = c.chunk;
    out.push_back(a);
  };
  auto batch = [&](std::vector<PipeTransfer> t) {
    if (t.empty()) return;
    PipeAction a;
    a.kind = PipeAction::Kind::kTransfer;
    a.transfers = std::move(t);
    out.push_back(std::move(a));
  };
  // The transfer a computation needs before it (receive) or makes after it (send), if any.
  auto recv_for = [&](const Compute& c, std::vector<PipeTransfer>& t) {
    const int s = c.chunk * P + pp;
    if (c.forward && s > 0) t.push_back({false, false, c.microbatch, c.chunk, prev});
    if (!c.forward && s < last) t.push_back({false, true, c.microbatch, c.chunk, next});
  };
  auto send_of = [&](const Compute& c, std::vector<PipeTransfer>& t) {
    const int s = c.chunk * P + pp;
    if (c.forward && s < last) t.push_back({true, false, c.microbatch, c.chunk, next});
    if (!c.forward && s > 0) t.push_back({true, true, c.microbatch, c.chunk, prev});
  };
  const std::vector<Compute> order = compute_order(P, V, m, pp);
  if (V == 1) {
    // Each computation's sends travel with the next one's receive.
    std::vector<PipeTransfer> pending;
    for (const Compute& c : order) {
      recv_for(c, pending);
      batch(std::move(pending));
      pending.clear();
      compute(c);
      send_of(c, pending);
    }
    batch(std::move(pending));
    return out;
  }
  // Interleaved, as Megatron batches it: every receive is posted one computation ahead (the
  // backward's gradient already with the forward before it), so that a rank whose neighbours
  // run other chunks never waits in a send.
  std::vector<Compute> fwd, bwd;
  for (const Compute& c : order) (c.forward ? fwd : bwd).push_back(c);
  const int total = m * V;
  int warmup = 0;
  while (warmup < int(order.size()) && order[warmup].forward && warmup < total) ++warmup;
  if (warmup < total) --warmup;  // the steady state's first forward was counted
  std::vector<PipeTransfer> t;
  recv_for(fwd[0], t);
  batch(std::move(t));
  for (int k = 0; k < warmup; ++k) {
    compute(fwd[k]);
    t.clear();
    send_of(fwd[k], t);
    if (k + 1 < total) recv_for(fwd[k + 1], t);
    if (k + 1 == warmup) recv_for(bwd[0], t);
    batch(std::move(t));
  }
  for (int k = 0; k < total - warmup; ++k) {
    compute(fwd[warmup + k]);
    compute(bwd[k]);
    t.clear();
    send_of(fwd[warmup + k], t);
    send_of(bwd[k], t);
    if (warmup + k + 1 < total) recv_for(fwd[warmup + k + 1], t);
    if (k + 1 < total) recv_for(bwd[k + 1], t);
    batch(std::move(t));
  }
  for (int k = total - warmup; k < total; ++k) {
    compute(bwd[k]);
    t.clear();
    send_of(bwd[k], t);
    if (k + 1 < total) recv_for(bwd[k + 1], t);
    batch(std::move(t));
  }
  return out;
}

int max_in_flight(const std::vector<PipeAction>& actions) {
  int now = 0, most = 0;
  for (const PipeAction& a : actions) {
    if (a.kind == PipeAction::Kind::kForward) most = std::max(most, ++now);
    if (a.kind == PipeAction::Kind::kBackward) --now;
  }
  return most;
}

std::string schedule_text(const std::vector<PipeAction>& actions) {
  std::string s;
  auto id = [](int mb, int c) { return std::to_string(mb) + "." + std::to_string(c); };
  for (const PipeAction& a : actions) {
    if (!s.empty()) s += ' ';
    if (a.kind == PipeAction::Kind::kForward) s += "F" + id(a.microbatch, a.chunk);
    if (a.kind == PipeAction::Kind::kBackward) s += "B" + id(a.microbatch, a.chunk);
    if (a.kind != PipeAction::Kind::kTransfer) continue;
    s += '[';
    for (size_t i = 0; i < a.transfers.size(); ++i) {
      const PipeTransfer& t = a.transfers[i];
      s += (i ? " " : "") + std::string(t.send ? ">" : "<") + (t.gradient ? "B" : "F") +
           id(t.microbatch, t.chunk) + "@" + std::to_string(t.peer);
    }
    s += ']';
  }
  return s;
}

}  // namespace gpt::dist
