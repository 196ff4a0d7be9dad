#include "train/loop/pipeline_parallel.h"

#include <algorithm>
#include <cmath>

#include "common/cli/error.h"
#include "kernels/clip_scale.h"
#include "train/loop/data_parallel.h"

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

std::vector<std::pair<size_t, size_t>> norm_ranges(const ParamLayout& layout) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const TensorInfo& t : layout.tensors()) {
    if (!layout.counts_in_norm(t)) continue;
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
  connect_neighbours();
}

void PipelineParallel::connect_neighbours() {
  // NCCL connects two ranks at their first transfer, inside the batch that holds it; the
  // interleaved schedule's first batches meet new peers in different orders on different ranks
  // (the last stage's activations wrap around to rank 0). One element to and from both
  // neighbours, on every rank at once, makes every connection the schedule uses first.
  const int P = mp_.layout.pipeline, pp = mp_.coord.pp;
  if (P == 1) return;
  Backend& be = *chunks_.front().backend;
  const dist::DType t = be.stage_activation_dtype();
  const int next = (pp + 1) % P, prev = (pp + P - 1) % P;
  std::vector<dist::P2POp> ops{{true, be.stage_buffer(kActOut), 1, t, next},
                               {false, be.stage_buffer(kActIn), 1, t, prev}};
  if (next != prev) {
    ops.push_back({true, be.stage_buffer(kGradOut), 1, t, prev});
    ops.push_back({false, be.stage_buffer(kGradIn), 1, t, next});
  }
  mp_.pipeline->send_recv(ops);
  mp_.pipeline->synchronize();
}

double PipelineParallel::train_step(const std::vector<const int*>& inputs,
                                    const std::vector<const int*>& targets, float loss_weight,
                                    const std::function<void(int, Backend&)>& before_forward) {
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
    PassClock* clock = clocks_.empty() ? nullptr : clocks_[size_t(a.chunk)];
    if (a.kind == dist::PipeAction::Kind::kForward) {
      auto free = std::find(busy[a.chunk].begin(), busy[a.chunk].end(), false);
      if (free == busy[a.chunk].end())
        throw suite::ToolError("pipeline executor: no free slot (an internal error)");
      *free = true;
      const int slot = int(free - busy[a.chunk].begin());
      slot_of[a.chunk][a.microbatch] = slot;
      before_forward(a.microbatch, be);
      if (clock) clock->begin();
      const float l = be.stage_forward(slot, st.has_embedding ? inputs[a.microbatch] : nullptr,
                                       st.has_head ? targets[a.microbatch] : nullptr,
                                       be.stage_buffer(kActIn), be.stage_buffer(kActOut));
      if (clock) clock->end(false);
      if (st.has_head) loss += l;
    } else {
      const int slot = slot_of[a.chunk][a.microbatch];
      if (clock) clock->begin();
      be.stage_backward(slot, be.stage_buffer(kGradIn), be.stage_buffer(kGradOut), loss_weight);
      if (clock) clock->end(true);
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

Backend::StepEnd PipelineParallel::end_step(const AdamWConfig& config, float lr, int step,
                                            float clip_grad, double loss_scale, double step_loss,
                                            double loss_share,
                                            const std::function<void(double*, size_t)>& world_sum) {
  double v[2] = {step_loss * loss_share, 0.0};
  for (const Chunk& ch : chunks_) {
    Backend& be = *ch.backend;
    be.prepare_grads_for_reduce();
    const Backend::FlatBuffers buf = be.flat_buffers();
    if (mp_.data->size() > 1) {
      mp_.data->all_reduce_sum(buf.grads, ch.layout->total(), dist::DType::kF32);
      mp_.data->synchronize();
    }
    if (mp_.coord.dp != 0) continue;  // the DP group holds the same sums: counted once
    const auto ranges = norm_ranges(*ch.layout);
    std::vector<double> sums(ranges.size());
    be.grad_sum_squares(ranges, sums.data());
    for (double x : sums) v[1] += x;
  }
  world_sum(v, 2);
  const Backend::StepEnd e = step_decision(v[0], v[1], mp_.layout.data, loss_scale);
  if (!e.updated) return e;
  const float scale = step_grad_scale(e, clip_grad, loss_scale);
  for (const Chunk& ch : chunks_)
    ch.backend->adamw_range(config, lr, step, scale, 0, ch.layout->total());
  return e;
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
