// Checkpoints of tensor/pipeline/data-parallel runs: each rank's tensors placed at their global
// offsets when saving, sliced out of the global tensors when loading (checkpoint.h).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/cli/error.h"
#include "train/model/checkpoint.h"
#include "train/model/checkpoint_io.h"

namespace gpt {
namespace {

using ckptio::Run;

// Where each element of the local tensor t lies in its global tensor, found by the layout's own
// unshard (local indices copied as bit patterns), so the runs never disagree with the slicing.
void tensor_runs(const ParamLayout& layout, const TensorInfo& t, size_t global_base,
                 std::vector<Run>& out) {
  constexpr uint32_t kNone = 0xFFFFFFFFu;
  std::vector<uint32_t> local(t.numel), global(t.global_numel, kNone);
  for (size_t i = 0; i < t.numel; ++i) local[i] = uint32_t(i);
  static_assert(sizeof(float) == sizeof(uint32_t));
  layout.unshard(t, reinterpret_cast<const float*>(local.data()),
                 reinterpret_cast<float*>(global.data()));
  for (size_t g = 0; g < global.size(); ++g) {
    if (global[g] == kNone) continue;
    const size_t l = t.offset + global[g];
    if (!out.empty() && out.back().global + out.back().n == global_base + g &&
        out.back().local + out.back().n == l)
      ++out.back().n;
    else
      out.push_back({global_base + g, l, 1});
  }
}

// The runs of `runs` (ordered by local offset) inside the sorted local ranges `owned`.
std::vector<Run> clip(const std::vector<Run>& runs, std::vector<std::pair<size_t, size_t>> owned) {
  std::sort(owned.begin(), owned.end());
  std::vector<Run> out;
  size_t o = 0;
  for (const Run& r : runs) {
    while (o < owned.size() && owned[o].second <= r.local) ++o;
    for (size_t k = o; k < owned.size() && owned[k].first < r.local + r.n; ++k) {
      const size_t lo = std::max(r.local, owned[k].first);
      const size_t hi = std::min(r.local + r.n, owned[k].second);
      if (lo < hi) out.push_back({r.global + (lo - r.local), lo, hi - lo});
    }
  }
  return out;
}

}  // namespace

void save_checkpoint(const std::string& dir, const Checkpoint& c,
                     const std::vector<SaveChunk>& chunks, int rank, int world,
                     const AllOk& all_ok) {
  const ParamLayout full(c.model);
  std::vector<Run> runs;
  std::vector<ckptio::Source> sources;
  std::string error;
  try {
    for (size_t k = 0; k < chunks.size(); ++k) {
      const SaveChunk& ch = chunks[k];
      const ParamLayout& layout = *ch.layout;
      const StageSpec& st = layout.stage();
      std::vector<Run> mine;
      for (const TensorInfo& t : layout.tensors()) {
        if (ParamLayout::replicated_in_tp(t) && st.tp_rank != 0) continue;
        if (t.global_index == 0 && !st.has_embedding) continue;  // the last stage's tied copy
        const TensorInfo& g = full.tensors().at(size_t(t.global_index));
        if (g.name != t.name || g.numel != t.global_numel)
          throw suite::ToolError("tensor " + t.name + " does not match the model's " + g.name);
        tensor_runs(layout, t, g.offset, mine);
      }
      if (!ch.owned.empty()) mine = clip(mine, ch.owned);
      for (Run& r : mine) r.source = int(k);
      runs.insert(runs.end(), mine.begin(), mine.end());
      sources.push_back({ch.params, ch.adam_m, ch.adam_v});
    }
  } catch (const suite::ToolError& e) {
    error = e.what();
  }
  if (!error.empty()) {
    all_ok(false);  // save_runs' first barrier: every rank then throws
    throw suite::ToolError(dir, error);
  }
  std::vector<std::string> tensors;
  for (const TensorInfo& t : full.tensors()) {
    std::string shape;
    for (int d : t.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    tensors.push_back(t.name + " " + shape + " " + std::to_string(t.offset));
  }
  ckptio::save_runs(dir, c, full.total(), runs, sources, tensors, rank, world, all_ok);
}

void save_checkpoint(const std::string& dir, const Checkpoint& c, const ParamLayout& layout,
                     const SavePart& part, const AllOk& all_ok) {
  if (c.params.size() != layout.total() || c.adam_m.size() != layout.total() ||
      c.adam_v.size() != layout.total()) {
    all_ok(false);
    throw suite::ToolError(dir, "checkpoint buffers do not match this rank's layout");
  }
  SaveChunk ch;
  ch.layout = &layout;
  ch.params = c.params.data();
  ch.adam_m = c.adam_m.data();
  ch.adam_v = c.adam_v.data();
  ch.owned = part.owned;
  save_checkpoint(dir, c, std::vector<SaveChunk>{ch}, part.rank, part.world, all_ok);
}

Checkpoint load_checkpoint(const std::string& dir, const ModelConfig& run,
                           const ParamLayout& layout) {
  const ckptio::Reader reader(dir);
  Checkpoint c = reader.meta();
  check_same_model(c.model, run, dir, /*same_padding=*/false);
  const ParamLayout stored(c.model);
  if (stored.total() != reader.num_params())
    throw suite::ToolError(dir, "checkpoint holds " + std::to_string(reader.num_params()) +
                                    " parameters, its model shape " +
                                    std::to_string(stored.total()));
  std::vector<float>* bufs[3] = {&c.params, &c.adam_m, &c.adam_v};
  for (auto* b : bufs) b->assign(layout.total(), 0.0f);
  std::vector<float> global;
  for (const TensorInfo& t : layout.tensors()) {
    const TensorInfo& s = stored.tensors().at(size_t(t.global_index));
    // The word embedding: the stored rows up to this run's padded vocabulary, zeros after.
    const size_t n = std::min(s.numel, t.global_numel);
    if (t.global_index != 0 && s.numel != t.global_numel)
      throw suite::ToolError(dir, "tensor " + t.name + " has " + std::to_string(s.numel) +
                                      " elements in the checkpoint, " +
                                      std::to_string(t.global_numel) + " in this run");
    global.assign(t.global_numel, 0.0f);
    for (int w = 0; w < 3; ++w) {
      reader.read(w, s.offset, n, global.data());
      layout.shard_of(t, global.data(), bufs[w]->data() + t.offset);
    }
  }
  return c;
}

}  // namespace gpt
