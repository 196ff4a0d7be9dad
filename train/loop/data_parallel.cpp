#include "train/loop/data_parallel.h"

#include <algorithm>
#include <cmath>

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

BucketPlan plan_buckets(size_t numel, int data_parallel, int64_t bucket_size) {
  BucketPlan plan;
  // Pieces of a multiple of 4 elements: every piece (and a compact shard of them) starts on 16
  // bytes, as the CUDA kernels' vector loads want.
  const size_t D = size_t(data_parallel), unit = 4 * D;
  plan.data_parallel = data_parallel;
  plan.numel = numel;
  plan.padded = (numel + unit - 1) / unit * unit;
  const size_t step = std::max(unit, size_t(bucket_size) / unit * unit);
  for (size_t b = 0; b < plan.padded; b += step)
    plan.buckets.push_back({b, std::min(b + step, plan.padded)});
  return plan;
}

DataParallel::DataParallel(Backend& backend, const BucketPlan& plan, const DistEnv& env,
                           const DataParallelOptions& options)
    : be_(backend), plan_(plan), env_(env), opt_(options) {
  if (!env_.comm || !env_.host_sum)
    throw suite::ToolError("data parallelism without a communicator (an internal error)");
  const Backend::FlatBuffers buf = be_.flat_buffers();
  if (buf.on_device && env_.set_stream) env_.set_stream(buf.stream);
}

void DataParallel::reduce_gradients() {
  const int D = plan_.data_parallel, r = env_.rank;
  const Backend::FlatBuffers buf = be_.flat_buffers();
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
        env_.comm->synchronize();
        be_.grads_from_bf16(h + n * bytes, b.begin + size_t(r) * p, b.begin + size_t(r + 1) * p);
      } else {
        env_.comm->all_reduce_sum(h, n, dist::DType::kBF16);
        env_.comm->synchronize();
        be_.grads_from_bf16(h, b.begin, b.end);
      }
    } else if (opt_.distributed_optimizer) {
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
  env_.comm->synchronize();
}

Backend::StepEnd DataParallel::end_step(const AdamWConfig& config, float lr, int step,
                                        float clip_grad, double loss_scale) {
  const int D = plan_.data_parallel, r = env_.rank;
  const bool sharded = opt_.distributed_optimizer;
  const double local_loss = be_.take_step_loss();
  be_.prepare_grads_for_reduce();
  reduce_gradients();
  // [0] the loss, then one sum of squares per (bucket, piece): plain DP computes every piece
  // itself (all ranks hold the reduced gradients), the distributed optimizer its own and gets
  // the others through the sum (adding zeros keeps the bits).
  const size_t nb = plan_.buckets.size();
  std::vector<double> v(1 + nb * size_t(D), 0.0);
  v[0] = local_loss;
  std::vector<std::pair<size_t, size_t>> pieces;
  std::vector<size_t> slots;
  for (size_t b = 0; b < nb; ++b) {
    const Bucket& k = plan_.buckets[b];
    const size_t p = k.piece(D);
    for (int q = 0; q < D; ++q)
      if (!sharded || q == r) {
        pieces.push_back({k.begin + q * p, k.begin + (q + 1) * p});
        slots.push_back(1 + b * D + q);
      }
  }
  if (opt_.model_parallel) {
    // Every rank's own pieces (its DP group holds the same reduced gradients), cut to the
    // gradients it counts; [0] the loss share, [1] the sum of squares, over the world.
    std::vector<std::pair<size_t, size_t>> cut;
    for (size_t i = 0; i < pieces.size(); ++i) {
      if ((slots[i] - 1) % size_t(D) != size_t(r)) continue;
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
    env_.host_sum(v.data(), 2);
  } else {
    std::vector<double> sums(pieces.size());
    be_.grad_sum_squares(pieces, sums.data());
    for (size_t i = 0; i < pieces.size(); ++i) v[slots[i]] = sums[i];
    env_.host_sum(v.data(), sharded ? v.size() : 1);
  }
  double sq = 0;
  for (size_t i = 1; i < v.size(); ++i) sq += v[i];
  Backend::StepEnd e;
  e.loss = v[0] / D;
  e.norm = std::sqrt(sq) / loss_scale;
  e.updated = std::isfinite(e.norm) && std::isfinite(e.loss);
  if (!e.updated) return e;
  const float scale = float(clip_scale(float(e.norm), clip_grad) / loss_scale);
  if (!sharded) {
    be_.adamw_range(config, lr, step, scale, 0, plan_.numel);
    return e;
  }
  for (const auto& [lo, hi] : plan_.owned(r)) be_.adamw_range(config, lr, step, scale, lo, hi);
  const Backend::FlatBuffers buf = be_.flat_buffers();
  for (const Bucket& b : plan_.buckets) {
    const size_t p = b.piece(D);
    env_.comm->all_gather(buf.params + b.begin + size_t(r) * p, buf.params + b.begin, p,
                          dist::DType::kF32);
  }
  env_.comm->synchronize();
  be_.params_changed();
  return e;
}

}  // namespace gpt
