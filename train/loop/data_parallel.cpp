#include "train/loop/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/cli/error.h"
#include "kernels/ops.h"

namespace gpt {

std::vector<std::pair<size_t, size_t>> BucketPlan::owned(int rank) const {
  std::vector<std::pair<size_t, size_t>> out;
  for (const Bucket& b : buckets) {
    const size_t p = b.piece(data_parallel);
    const size_t lo = b.begin + size_t(rank) * p, hi = std::min(lo + p, numel);
    if (lo < hi) out.push_back({lo, hi});
  }
  return out;
}

BucketPlan plan_buckets(size_t numel, int data_parallel, int64_t bucket_size,
                        const std::vector<size_t>& ready) {
  BucketPlan plan;
  // Pieces of a multiple of 4 elements: every piece (and a compact shard of them) starts on 16
  // bytes, as the CUDA kernels' vector loads want.
  const size_t D = size_t(data_parallel), unit = 4 * D;
  plan.data_parallel = data_parallel;
  plan.numel = numel;
  plan.padded = (numel + unit - 1) / unit * unit;
  const size_t step = std::max(unit, size_t(bucket_size) / unit * unit);
  if (ready.empty()) {
    for (size_t b = 0; b < plan.padded; b += step)
      plan.buckets.push_back({b, std::min(b + step, plan.padded)});
    return plan;
  }
  // Cut only where the backward makes gradients final (rounded up to the unit: the few elements
  // above a cut that belong to the tensor below were final before it), filled from the last
  // parameters, the first the backward finishes. The first two cuts always end a bucket: the
  // first layer's gradients and the embeddings' are final only at the backward's end, where
  // their reduction cannot overlap it, so they go in small buckets of their own instead of the
  // tail of a full one.
  std::vector<size_t> cuts;
  for (size_t r : ready) {
    const size_t c = (r + unit - 1) / unit * unit;
    if (c > 0 && c < plan.padded) cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  size_t end = plan.padded;
  for (size_t i = cuts.size(); i-- > 0;)
    if (end - cuts[i] >= step || i < 2) {
      plan.buckets.push_back({cuts[i], end});
      end = cuts[i];
    }
  plan.buckets.push_back({0, end});
  std::reverse(plan.buckets.begin(), plan.buckets.end());
  return plan;
}

DataParallel::DataParallel(Backend& backend, const BucketPlan& plan, const DistEnv& env,
                           const DataParallelOptions& options)
    : be_(backend), plan_(plan), env_(env), opt_(options) {
  if (!env_.comm || !env_.host_sum)
    throw suite::ToolError("data parallelism without a communicator (an internal error)");
  opt_.gather_chunk = std::max<size_t>(1, opt_.gather_chunk);
  overlap_grads_ = opt_.overlap_grad_reduce && !opt_.reduce_in_bf16;
  overlap_params_ = overlap_grads_ && opt_.overlap_param_gather && opt_.distributed_optimizer;
  unreduced_ = plan_.buckets.size();
  ungathered_ = plan_.buckets.size();
  const Backend::FlatBuffers buf = be_.flat_buffers();
  void* comm_stream = overlap_grads_ ? be_.comm_stream() : nullptr;
  if (buf.on_device && env_.set_stream) env_.set_stream(comm_stream ? comm_stream : buf.stream);
  if (overlap_grads_) be_.set_grads_ready([this](size_t begin) { grads_ready(begin); });
  if (overlap_params_) be_.set_params_needed([this](size_t end) { params_needed(end); });
  if (overlap_grads_) be_.set_captured_hooks(this);
  if (opt_.distributed_optimizer && be_.shards_master())
    be_.set_full_params([this](float* host) { full_params(host); });
}

template <class F>
void DataParallel::gather_chunks(float* staging, F&& f) {
  const int D = plan_.data_parallel, r = env_.rank;
  const Backend::FlatBuffers buf = be_.flat_buffers();
  for (size_t i = 0; i < plan_.buckets.size(); ++i) {
    const Bucket& b = plan_.buckets[i];
    const size_t p = b.piece(D);
    for (size_t k = 0; k < p; k += opt_.gather_chunk) {
      const size_t m = std::min(opt_.gather_chunk, p - k);
      env_.comm->all_gather(buf.params + b.begin + size_t(r) * p + k, staging, m,
                            dist::DType::kF32);
      f(b.begin + k, m, p, i);
    }
    f(b.begin, 0, p, i);
  }
}

void DataParallel::full_params(float* host) {
  // Every rank's fp32 pieces, chunk by chunk through the staging to the host.
  const int D = plan_.data_parallel;
  size_t largest = 0;
  for (const Bucket& b : plan_.buckets) largest = std::max(largest, b.piece(D));
  float* staging = be_.gather_staging(size_t(D) * std::min(largest, opt_.gather_chunk));
  std::vector<float> chunk;
  if (overlap_grads_) be_.comm_waits_for_compute();  // after AdamW
  gather_chunks(staging, [&](size_t begin, size_t m, size_t piece, size_t) {
    if (m == 0) return;
    env_.comm->synchronize();
    chunk.resize(size_t(D) * m);
    be_.read_staging(chunk.data(), staging, chunk.size());
    for (int q = 0; q < D; ++q) {
      const size_t at = begin + size_t(q) * piece;
      if (at >= plan_.numel) break;
      const size_t n = std::min(m, plan_.numel - at);
      std::copy(chunk.begin() + size_t(q) * m, chunk.begin() + size_t(q) * m + n, host + at);
    }
  });
}

void DataParallel::grads_ready(size_t begin) {
  // The buckets in reverse address order, each once its first element is final.
  bool ordered = false;
  while (unreduced_ > 0 && plan_.buckets[unreduced_ - 1].begin >= begin) {
    if (!ordered) be_.comm_waits_for_compute();
    ordered = true;
    reduce_bucket(plan_.buckets[--unreduced_]);
  }
}

void DataParallel::params_needed(size_t end) {
  if (gather_deferred_) {
    gather_deferred_ = false;
    queue_gathers();
  }
  // The gathers were queued in address order, each followed by its mark: waiting for the last
  // bucket that starts below `end` covers those before it.
  size_t upto = ungathered_;
  while (upto < plan_.buckets.size() && plan_.buckets[upto].begin < end) ++upto;
  if (upto > ungathered_) be_.compute_waits_for_mark(upto - 1);
  ungathered_ = upto;
  if (ungathered_ == plan_.buckets.size()) be_.params_pending(false);
}

void DataParallel::set_hook_state(const HookState& s) {
  unreduced_ = s.unreduced;
  ungathered_ = s.ungathered;
  gather_deferred_ = s.gather_deferred;
  // Pending from gather_params until the forward has waited for every bucket (params_needed).
  if (overlap_params_) be_.params_pending(ungathered_ < plan_.buckets.size());
}

void DataParallel::capture_begin() {
  capture_start_ = hook_state();
  env_.comm->begin_capture();
}

bool DataParallel::capture_end(int key, bool ok) {
  Capture c{capture_start_, hook_state(), env_.comm->end_capture()};
  set_hook_state(capture_start_);  // the capture ran nothing: each launch does (replayed)
  // Every rank's capture or none: a captured collective runs only if all ranks launch its graph.
  double failed = ok ? 0.0 : 1.0;
  env_.host_sum(&failed, 1);
  if (failed != 0.0) {
    captures_.erase(key);
    return false;
  }
  captures_[key] = std::move(c);
  return true;
}

bool DataParallel::can_replay(int key) const {
  const auto it = captures_.find(key);
  return it != captures_.end() && it->second.before == hook_state();
}

void DataParallel::replayed(int key, void* stream) {
  if (!can_replay(key))
    throw std::logic_error("a step graph replayed from another state of its hooks");
  const Capture& c = captures_.at(key);
  set_hook_state(c.after);
  env_.comm->issue_captured(c.collectives, stream);
}

void DataParallel::reduce_bucket(const Bucket& b) {
  const int D = plan_.data_parallel, r = env_.rank;
  const Backend::FlatBuffers buf = be_.flat_buffers();
  const size_t n = b.end - b.begin, p = b.piece(D);
  if (opt_.distributed_optimizer) {
    // This rank's piece of the bucket receives the piece's sum: in place on the device (out =
    // in + rank x piece, which NCCL allows), through a copy on the host (the TCP communicator
    // promises no in-place reduce-scatter).
    float* mine = buf.grads + b.begin + size_t(r) * p;
    if (buf.on_device) {
      env_.comm->reduce_scatter_sum(buf.grads + b.begin, mine, p, dist::DType::kF32);
    } else {
      host_piece_.resize(p);
      env_.comm->reduce_scatter_sum(buf.grads + b.begin, host_piece_.data(), p,
                                    dist::DType::kF32);
      std::copy(host_piece_.begin(), host_piece_.end(), mine);
    }
  } else {
    env_.comm->all_reduce_sum(buf.grads + b.begin, n, dist::DType::kF32);
  }
}

void DataParallel::reduce_gradients() {
  const int D = plan_.data_parallel, r = env_.rank;
  // On the device without the overlap the communicator queues on the backend's stream: the
  // stream's order is enough, no host wait.
  const bool ordered = be_.flat_buffers().on_device && !overlap_grads_;
  auto wait = [&] {
    if (!ordered) env_.comm->synchronize();
  };
  size_t largest = 0;
  for (const Bucket& b : plan_.buckets) largest = std::max(largest, b.end - b.begin);
  // The last bucket first: the backward finishes the last layers' gradients first.
  for (auto it = plan_.buckets.rbegin(); it != plan_.buckets.rend(); ++it) {
    const Bucket& b = *it;
    const size_t n = b.end - b.begin, p = b.piece(D);
    if (opt_.reduce_in_bf16) {
      // scratch: [0, n) the bucket in bf16, [n, n + p) this rank's reduced piece
      char* h = static_cast<char*>(be_.grads_to_bf16(b.begin, b.end, largest + largest / D));
      const size_t bytes = 2;  // bf16
      if (opt_.distributed_optimizer) {
        env_.comm->reduce_scatter_sum(h, h + n * bytes, p, dist::DType::kBF16);
        wait();
        be_.grads_from_bf16(h + n * bytes, b.begin + size_t(r) * p, b.begin + size_t(r + 1) * p);
      } else {
        env_.comm->all_reduce_sum(h, n, dist::DType::kBF16);
        wait();
        be_.grads_from_bf16(h, b.begin, b.end);
      }
    } else {
      reduce_bucket(b);
    }
  }
  wait();
}

Backend::StepEnd step_decision(double loss_sum, double sum_squares, int data_parallel,
                               double loss_scale) {
  Backend::StepEnd e;
  e.loss = loss_sum / data_parallel;
  e.norm = std::sqrt(sum_squares) / loss_scale;
  e.updated = std::isfinite(e.norm) && std::isfinite(e.loss);
  return e;
}

float step_grad_scale(const Backend::StepEnd& e, float clip_grad, double loss_scale) {
  return float(clip_scale(float(e.norm), clip_grad) / loss_scale);
}

void DataParallel::finish_reduction() {
  if (overlap_grads_) {
    // The backward has queued the reductions (all of them but where the step's micro-batches
    // were not queued through queue_micro_batch: those follow now); the norm waits for them.
    if (unreduced_ > 0) {
      be_.prepare_grads_for_reduce();
      grads_ready(0);
    }
    unreduced_ = plan_.buckets.size();
    be_.compute_waits_for_comm();
  } else {
    be_.prepare_grads_for_reduce();
    reduce_gradients();
  }
}

void DataParallel::norm_pieces(size_t first, std::vector<std::pair<size_t, size_t>>* pieces,
                               std::vector<size_t>* slots) const {
  // Slot first + b·D + q: bucket b's piece q. Plain DP sums every piece itself (all ranks hold the
  // reduced gradients), the distributed optimizer its own and gets the others through the sum
  // (adding zeros keeps the bits).
  const int D = plan_.data_parallel, r = env_.rank;
  for (size_t b = 0; b < plan_.buckets.size(); ++b) {
    const Bucket& k = plan_.buckets[b];
    const size_t p = k.piece(D);
    for (int q = 0; q < D; ++q)
      if (!opt_.distributed_optimizer || q == r) {
        pieces->push_back({k.begin + q * p, k.begin + (q + 1) * p});
        slots->push_back(first + b * D + q);
      }
  }
}

std::vector<double> DataParallel::step_sums(size_t* summed, const double* agree,
                                            size_t n_agree) {
  const int D = plan_.data_parallel, r = env_.rank;
  const bool sharded = opt_.distributed_optimizer;
  const double local_loss = be_.take_step_loss();
  finish_reduction();
  // [0] the loss, [1, 1 + n_agree) the values to agree on, then one sum of squares per
  // (bucket, piece), norm_pieces' slots.
  const size_t nb = plan_.buckets.size(), first = 1 + n_agree;
  std::vector<double> v(first + nb * size_t(D), 0.0);
  v[0] = local_loss;
  std::copy(agree, agree + n_agree, v.begin() + 1);
  std::vector<std::pair<size_t, size_t>> pieces;
  std::vector<size_t> slots;
  norm_pieces(first, &pieces, &slots);
  if (opt_.model_parallel) {
    if (n_agree > 0) throw std::logic_error("values to agree on with model parallelism");
    // Every rank's own pieces (its DP group holds the same reduced gradients), cut to the
    // gradients it counts; [0] the loss share, [1] the sum of squares, over the world.
    std::vector<std::pair<size_t, size_t>> cut;
    for (size_t i = 0; i < pieces.size(); ++i) {
      if ((slots[i] - first) % size_t(D) != size_t(r)) continue;
      for (const auto& [lo, hi] : opt_.norm_ranges) {
        const size_t a = std::max(lo, pieces[i].first), b = std::min(hi, pieces[i].second);
        if (a < b) cut.push_back({a, b});
      }
    }
    std::vector<double> cs(cut.size());
    be_.grad_sum_squares(cut, cs.data());
    v.assign(2, 0.0);
    v[0] = (has_step_loss_ ? step_loss_ : local_loss) * opt_.loss_share;
    has_step_loss_ = false;
    for (double x : cs) v[1] += x;
    *summed = 2;
  } else {
    std::vector<double> sums(pieces.size());
    be_.grad_sum_squares(pieces, sums.data());
    for (size_t i = 0; i < pieces.size(); ++i) v[slots[i]] = sums[i];
    *summed = sharded ? v.size() : first;
  }
  return v;
}

Backend::StepEnd DataParallel::end_step_on_device(const AdamWConfig& config, float lr, int step,
                                                  float clip_grad, double loss_scale,
                                                  double* agree, size_t n_agree) {
  // step_sums' vector, summed on the device with the same collective host_sum runs (so the
  // same bits), then the decision and AdamW queued behind it: the host waits only for the
  // decision, while AdamW runs, as one GPU's end_step does.
  const int D = plan_.data_parallel;
  const bool sharded = opt_.distributed_optimizer;
  finish_reduction();
  const size_t first = 1 + n_agree;
  std::vector<std::pair<size_t, size_t>> pieces;
  std::vector<size_t> slots;
  norm_pieces(first, &pieces, &slots);
  const size_t n = first + plan_.buckets.size() * size_t(D);
  double* sums = be_.queue_step_sums(pieces, slots, n, agree, n_agree);
  if (overlap_grads_) be_.comm_waits_for_compute();
  env_.comm->all_reduce_sum(sums, sharded ? n : first, dist::DType::kF64);
  if (overlap_grads_) be_.compute_waits_for_comm();
  be_.queue_step_decision(sums, n, first, D, clip_grad, loss_scale);
  update(config, lr, step, 1.0f, /*decided=*/true);
  return be_.read_step_decision(agree, n_agree);
}

void DataParallel::update(const AdamWConfig& config, float lr, int step, float scale,
                          bool decided) {
  auto adamw = [&](size_t lo, size_t hi) {
    if (decided)
      be_.adamw_range_decided(config, lr, step, lo, hi);
    else
      be_.adamw_range(config, lr, step, scale, lo, hi);
  };
  if (!opt_.distributed_optimizer) return adamw(0, plan_.numel);
  for (const auto& [lo, hi] : plan_.owned(env_.rank)) adamw(lo, hi);
  // Decided on the device, a skipped step leaves the shards as they were: gathering them
  // changes nothing.
  gather_params();
}

Backend::StepEnd DataParallel::end_step(const AdamWConfig& config, float lr, int step,
                                        float clip_grad, double loss_scale, double* agree,
                                        size_t n_agree) {
  if (!opt_.model_parallel && be_.device_step_end())
    return end_step_on_device(config, lr, step, clip_grad, loss_scale, agree, n_agree);
  size_t summed = 0;
  std::vector<double> v = step_sums(&summed, agree, n_agree);
  env_.host_sum(v.data(), summed);
  std::copy(v.begin() + 1, v.begin() + 1 + n_agree, agree);
  double sq = 0;
  for (size_t i = 1 + n_agree; i < v.size(); ++i) sq += v[i];
  const Backend::StepEnd e = step_decision(v[0], sq, plan_.data_parallel, loss_scale);
  if (e.updated) update(config, lr, step, step_grad_scale(e, clip_grad, loss_scale));
  return e;
}

Backend::StepEnd DataParallel::end_step(const std::vector<DataParallel*>& chunks,
                                        const AdamWConfig& config, float lr, int step,
                                        float clip_grad, double loss_scale) {
  double v[2] = {0.0, 0.0};
  for (DataParallel* c : chunks) {
    if (!c->opt_.model_parallel)
      throw suite::ToolError("several model chunks without model parallelism (an internal error)");
    size_t summed = 0;
    const std::vector<double> s = c->step_sums(&summed, nullptr, 0);
    v[0] += s[0];
    v[1] += s[1];
  }
  DataParallel& first = *chunks.front();
  first.env_.host_sum(v, 2);
  const Backend::StepEnd e = step_decision(v[0], v[1], first.plan_.data_parallel, loss_scale);
  if (!e.updated) return e;
  const float scale = step_grad_scale(e, clip_grad, loss_scale);
  for (DataParallel* c : chunks) c->update(config, lr, step, scale);
  return e;
}

void DataParallel::gather_params() {
  if (overlap_params_) {
    // Queued at the next forward's first need (or a host read of the parameters): the host's
    // own collectives between the steps (the stop decision) then do not wait behind them, and
    // the forward waits bucket by bucket (params_needed).
    gather_deferred_ = true;
    ungathered_ = 0;
    be_.params_pending(true);
    return;
  }
  queue_gathers();
  if (overlap_grads_)
    be_.compute_waits_for_comm();
  else
    env_.comm->synchronize();
  if (!be_.shards_master()) be_.params_changed();
}

void DataParallel::queue_gathers() {
  const int D = plan_.data_parallel, r = env_.rank;
  const Backend::FlatBuffers buf = be_.flat_buffers();
  if (overlap_grads_) be_.comm_waits_for_compute();  // after AdamW
  if (be_.shards_master()) {
    // Each chunk from the staging into the compute copy, where the collectives run.
    size_t largest = 0;
    for (const Bucket& b : plan_.buckets) largest = std::max(largest, b.piece(D));
    float* staging = be_.gather_staging(size_t(D) * std::min(largest, opt_.gather_chunk));
    gather_chunks(staging, [&](size_t begin, size_t m, size_t piece, size_t i) {
      if (m > 0) be_.params_from_staging(staging, D, m, begin, piece, overlap_grads_);
      if (m == 0 && overlap_params_) be_.mark_comm(i);
    });
    return;
  }
  for (size_t i = 0; i < plan_.buckets.size(); ++i) {
    const Bucket& b = plan_.buckets[i];
    const size_t p = b.piece(D);
    env_.comm->all_gather(buf.params + b.begin + size_t(r) * p, buf.params + b.begin, p,
                          dist::DType::kF32);
    if (overlap_params_) {
      be_.params_changed_on_comm(b.begin, std::min(b.end, plan_.numel));
      be_.mark_comm(i);
    }
  }
}

}  // namespace gpt
