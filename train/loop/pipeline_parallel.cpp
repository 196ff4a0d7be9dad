#include "train/loop/pipeline_parallel.h"

#include <algorithm>

#include "common/cli/error.h"

namespace gpt {
namespace {

// The executor's use of the backend's activation buffers (stage_buffer): a received activation,
// the activation to send, a received gradient, the gradient to send. A batch of transfers holds
// at most one of each, and a stage copies what it receives before it returns.
enum Buffer { kActIn = 0, kActOut = 1, kGradIn = 2, kGradOut = 3 };

}  // namespace

StageSpec ModelParallelEnv::stage(int chunk) const {
  StageSpec s;
  const int V = layout.virtual_stages;
  s.first_layer = layout.first_layer(coord.pp, chunk);
  s.num_layers = layout.num_layers(coord.pp, chunk);
  s.has_embedding = coord.pp == 0 && chunk == 0;
  s.has_head = coord.pp == layout.pipeline - 1 && chunk == V - 1;
  s.tp_size = layout.tensor;
  s.tp_rank = coord.tp;
  s.sequence_parallel = layout.sequence_parallel;
  return s;
}

std::vector<std::pair<size_t, size_t>> norm_ranges(const ParamLayout& layout,
                                                   const ModelParallelEnv& mp) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const TensorInfo& t : layout.tensors()) {
    if (ParamLayout::replicated_in_tp(t) && mp.coord.tp != 0) continue;
    const bool tied_head = layout.has_wte() && t.offset == layout.wte() &&
                           !layout.stage().has_embedding;
    if (tied_head) continue;
    if (!out.empty() && out.back().second == t.offset)
      out.back().second = t.offset + t.numel;
    else
      out.push_back({t.offset, t.offset + t.numel});
  }
  return out;
}

int PipelineParallel::slots(const dist::ParallelLayout& layout, int pp, int m) {
  if (layout.pipeline == 1) return 1;
  return dist::max_in_flight(dist::pipeline_schedule(layout.pipeline, layout.virtual_stages, m, pp));
}

PipelineParallel::PipelineParallel(std::vector<Chunk> chunks, const ModelParallelEnv& mp, int m)
    : chunks_(std::move(chunks)), mp_(mp), m_(m) {
  if (int(chunks_.size()) != mp_.layout.virtual_stages)
    throw suite::ToolError("pipeline executor: " + std::to_string(chunks_.size()) +
                           " model chunks for " + std::to_string(mp_.layout.virtual_stages) +
                           " virtual stages (an internal error)");
  actions_ = dist::pipeline_schedule(mp_.layout.pipeline, mp_.layout.virtual_stages, m_,
                                     mp_.coord.pp);
}

double PipelineParallel::train_step(const std::vector<const int*>& inputs,
                                    const std::vector<const int*>& targets, float loss_weight,
                                    const std::function<void(int)>& before_forward) {
  const int V = int(chunks_.size());
  // slot_of[c][i]: the backend slot holding micro-batch i of chunk c between its two passes.
  std::vector<std::vector<int>> slot_of(V, std::vector<int>(m_, -1));
  std::vector<std::vector<bool>> busy(V);
  for (int c = 0; c < V; ++c) busy[c].assign(size_t(slots(mp_.layout, mp_.coord.pp, m_)), false);
  double loss = 0;
  for (const dist::PipeAction& a : actions_) {
    if (a.kind == dist::PipeAction::Kind::kTransfer) {
      std::vector<dist::P2POp> ops;
      for (const dist::PipeTransfer& t : a.transfers) {
        Backend& be = *chunks_[t.chunk].backend;
        const int which = t.gradient ? (t.send ? kGradOut : kGradIn) : (t.send ? kActOut : kActIn);
        ops.push_back({t.send, be.stage_buffer(which), be.stage_activation_elements(),
                       be.stage_activation_dtype(), t.peer});
      }
      mp_.pipeline->send_recv(ops);
      continue;
    }
    const Chunk& ch = chunks_[a.chunk];
    const StageSpec& st = ch.layout->stage();
    Backend& be = *ch.backend;
    if (a.kind == dist::PipeAction::Kind::kForward) {
      auto free = std::find(busy[a.chunk].begin(), busy[a.chunk].end(), false);
      if (free == busy[a.chunk].end())
        throw suite::ToolError("pipeline executor: no free slot (an internal error)");
      *free = true;
      const int slot = int(free - busy[a.chunk].begin());
      slot_of[a.chunk][a.microbatch] = slot;
      before_forward(a.microbatch);
      if (clock_) clock_->begin();
      const float l = be.stage_forward(slot, st.has_embedding ? inputs[a.microbatch] : nullptr,
                                       st.has_head ? targets[a.microbatch] : nullptr,
                                       be.stage_buffer(kActIn), be.stage_buffer(kActOut));
      if (clock_) clock_->end(false);
      if (st.has_head) loss += l;
    } else {
      const int slot = slot_of[a.chunk][a.microbatch];
      if (clock_) clock_->begin();
      be.stage_backward(slot, be.stage_buffer(kGradIn), be.stage_buffer(kGradOut), loss_weight);
      if (clock_) clock_->end(true);
      busy[a.chunk][size_t(slot)] = false;
    }
  }
  reduce_tied_embedding();
  return loss / m_;
}

void PipelineParallel::reduce_tied_embedding() {
  if (mp_.layout.pipeline == 1 || !mp_.embedding || mp_.embedding->size() < 2) return;
  const Chunk& ch = mp_.first_stage() ? chunks_.front() : chunks_.back();
  if (!ch.layout->has_wte()) return;
  Backend& be = *ch.backend;
  be.prepare_grads_for_reduce();
  const Backend::FlatBuffers buf = be.flat_buffers();
  mp_.embedding->all_reduce_sum(buf.grads + ch.layout->wte(), ch.layout->wte_numel(),
                                dist::DType::kF32);
  mp_.embedding->synchronize();
}

double PipelineParallel::eval_micro_batch(const int* inputs, const int* targets) {
  const int P = mp_.layout.pipeline, V = int(chunks_.size()), pp = mp_.coord.pp;
  const int last = P * V - 1;
  double loss = 0;
  for (int c = 0; c < V; ++c) {
    const Chunk& ch = chunks_[c];
    const StageSpec& st = ch.layout->stage();
    Backend& be = *ch.backend;
    const int s = c * P + pp;
    void* in = be.stage_buffer(kActIn);
    void* out = be.stage_buffer(kActOut);
    const size_t n = be.stage_activation_elements();
    if (s > 0) mp_.pipeline->recv(in, n, be.stage_activation_dtype(), (pp + P - 1) % P);
    const float l = be.stage_forward_loss(st.has_embedding ? inputs : nullptr,
                                          st.has_head ? targets : nullptr, in, out);
    if (st.has_head) loss += l;
    if (s < last) mp_.pipeline->send(out, n, be.stage_activation_dtype(), (pp + 1) % P);
  }
  mp_.pipeline->synchronize();
  return loss;
}

}  // namespace gpt
