// Data parallelism for the trainer: gradient buckets over the flat buffers, their reduction over
// the ranks, the global norm, AdamW on everything (plain DP) or on this rank's shard followed by
// an all-gather of the parameters (--use-distributed-optimizer, ZeRO-1).
//
// Shards: the flat buffer is cut into buckets of about --ddp-bucket-size parameters, each a
// multiple of 4 x the data-parallel size D (the last one padded with zeros past layout.total());
// rank r owns piece r of every bucket. The gradient norm is always the sum, in (bucket, piece)
// order, of the pieces' sums of squares, so plain DP and the distributed optimizer compute the
// same bits; with the TCP communicator (sums in rank order) their losses are identical.
//
// Overlap: the backend calls back from its backward (a bucket's reduction is queued once its
// layers are done) and forward (a bucket's all-gather is waited for where it is first read); the
// collectives are the same ones on the same data, so the results are those without overlap.
// On CUDA a micro-batch with those hooks is captured into the backend's step graph, collectives
// included, and replayed without calling them (Backend::CapturedHooks): this object then moves
// its hook state as the capture's hooks did and has the communicator count the graph's
// collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "train/backend/backend.h"
#include "train/dist/communicator.h"

namespace gpt {

struct ModelParallelEnv;  // train/loop/pipeline_parallel.h

// Where this process stands in a data-parallel job, as the trainer needs it.
struct DistEnv {
  int rank = 0, world_size = 1, local_rank = 0;
  // Collectives on the backend's flat buffers (host memory on the CPU, device memory with NCCL).
  dist::Communicator* comm = nullptr;
  // Host agreement between the ranks: v[0:n] = the sum over ranks, the same bits on every rank
  // (stop decisions, the loss, the norm's pieces, barriers). Required when world_size > 1.
  std::function<void(double* v, size_t n)> host_sum;
  // NCCL: queue the collectives on this stream (the backend's FlatBuffers::stream), so that they
  // are ordered after the backward pass and before AdamW without the host in between.
  std::function<void(void* stream)> set_stream;
  std::string host = "localhost";
  std::string device_id = "cpu";  // the GPU's PCI bus id, or "cpu"
  // Tensor/pipeline parallelism (T·P > 1): the layout and this rank's groups; null otherwise.
  const ModelParallelEnv* model_parallel = nullptr;
  bool distributed() const { return world_size > 1; }
};

struct Bucket {
  size_t begin = 0, end = 0;  // [begin, end) of the padded flat buffer; (end - begin) % D == 0
  size_t piece(int D) const { return (end - begin) / size_t(D); }
};

struct BucketPlan {
  int data_parallel = 1;
  size_t numel = 0;   // layout.total()
  size_t padded = 0;  // numel rounded up to a multiple of 4·D (the backend's buffers)
  std::vector<Bucket> buckets;  // contiguous, in address order, covering [0, padded)
  // [begin, end) ranges of [0, numel) that rank r owns (its piece of every bucket, padding cut).
  std::vector<std::pair<size_t, size_t>> owned(int rank) const;
};

// Buckets of bucket_size elements rounded down to a multiple of 4·D (at least 4·D), in address
// order; or, given `ready` (the offsets from which the backward's gradients become final
// together: the layers' starts, Backend::set_grads_ready), buckets that start only there (rounded
// up to 4·D), each closed from the top once it holds bucket_size elements, and always at the two
// lowest cuts (the first layer alone, the embeddings below it).
BucketPlan plan_buckets(size_t numel, int data_parallel, int64_t bucket_size,
                        const std::vector<size_t>& ready = {});

// The step's global decision from the world's sums (every step end computes it this way): the
// loss (the sum of the replicas' losses over D), the norm (divided by the fp16 loss scale) and
// whether AdamW runs (both finite).
Backend::StepEnd step_decision(double loss_sum, double sum_squares, int data_parallel,
                               double loss_scale);
// AdamW's gradient factor: the clipping of the decision's norm, over the loss scale.
float step_grad_scale(const Backend::StepEnd& e, float clip_grad, double loss_scale);

struct DataParallelOptions {
  // Tensor/pipeline parallelism: the communicator is the data-parallel group's and the rank its
  // index there, while host_sum adds over the whole world. Each rank then adds its loss times
  // loss_share (1 on one rank of each model replica, 0 elsewhere) and the sums of squares of its
  // own pieces cut to norm_ranges (the gradients it counts), so the world's sums count each
  // gradient of the model once.
  bool model_parallel = false;
  double loss_share = 1.0;
  std::vector<std::pair<size_t, size_t>> norm_ranges;  // sorted, disjoint, of [0, numel)
  bool distributed_optimizer = false;
  bool reduce_in_bf16 = false;
  // --overlap-grad-reduce: each bucket's reduction is queued as soon as the backward of the step's
  // last micro-batch has completed its gradients (Backend::set_grads_ready), on CUDA on a second
  // stream. Not with reduce_in_bf16 (its scratch holds one bucket at a time): the reductions then
  // follow the backward.
  bool overlap_grad_reduce = false;
  // --overlap-param-gather (with the distributed optimizer and overlap_grad_reduce): the
  // all-gathers after AdamW are queued on the second stream, and the next forward waits for each
  // bucket only where it first reads it (Backend::set_params_needed).
  bool overlap_param_gather = false;
  // Backend::shards_master: elements per rank of each all-gather through the staging.
  size_t gather_chunk = size_t(1) << 22;
};

class DataParallel : public Backend::CapturedHooks {
 public:
  DataParallel(Backend& backend, const BucketPlan& plan, const DistEnv& env,
               const DataParallelOptions& options);
  // With the overlap options the backend calls back into this object: it must not queue
  // micro-batches once this is gone (the trainer destroys the backend first).
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // The step's loss when the micro-batches went through the pipeline executor rather than the
  // backend's queue (the next end_step reports it instead of take_step_loss's).
  void set_step_loss(double loss) { step_loss_ = loss, has_step_loss_ = true; }
  // The step after its micro-batches were queued: the gradient reduction, the global loss (the
  // mean of the ranks' losses), norm and decision, then AdamW with the gradients clipped to
  // clip_grad and divided by loss_scale (skipped, everywhere, when the loss or norm is not finite).
  // agree[0, n_agree) (the trainer's stop votes) are summed over the ranks in the same
  // collective, in place: a host collective of their own would make the host wait for the
  // step's end. Not with options.model_parallel.
  Backend::StepEnd end_step(const AdamWConfig& config, float lr, int step, float clip_grad,
                            double loss_scale, double* agree = nullptr, size_t n_agree = 0);
  // The same over several model chunks of one rank (the interleaved schedule with the distributed
  // optimizer, options.model_parallel, one object per chunk): each chunk's reduction and its
  // [loss share, sum of squares] added up, one world sum and decision, each chunk's AdamW shard.
  static Backend::StepEnd end_step(const std::vector<DataParallel*>& chunks,
                                   const AdamWConfig& config, float lr, int step, float clip_grad,
                                   double loss_scale);
  // Whether the reductions run during the backward (the options, less what reduce_in_bf16
  // rules out).
  bool overlaps_grad_reduce() const { return overlap_grads_; }
  bool overlaps_param_gather() const { return overlap_params_; }

  // Backend::CapturedHooks (the backend calls them; registered with the overlap options).
  void capture_begin() override;
  bool capture_end(int key, bool ok) override;
  bool can_replay(int key) const override;
  void replayed(int key, void* stream) override;

 private:
  double step_loss_ = 0;  // set_step_loss
  bool has_step_loss_ = false;
  // end_step's halves: the reduction and this rank's sums (v[0] the loss, then agree's values,
  // then the sums of squares; how many of them host_sum adds in *summed), then AdamW with the
  // gradient factor.
  std::vector<double> step_sums(size_t* summed, const double* agree, size_t n_agree);
  void finish_reduction();  // every bucket reduced (queued) and the compute after it
  // The norm's pieces this rank sums and their slots in step_sums' vector (from `first`).
  void norm_pieces(size_t first, std::vector<std::pair<size_t, size_t>>* pieces,
                   std::vector<size_t>* slots) const;
  // end_step with the sums, decision and AdamW queued on the device (Backend::device_step_end).
  Backend::StepEnd end_step_on_device(const AdamWConfig& config, float lr, int step,
                                      float clip_grad, double loss_scale, double* agree,
                                      size_t n_agree);
  // With `decided`, the factor and the skip come from the device's decision
  // (Backend::adamw_range_decided) instead of `scale`.
  void update(const AdamWConfig& config, float lr, int step, float scale, bool decided = false);
  void reduce_gradients();
  void reduce_bucket(const Bucket& b);  // queues its reduction (fp32)
  void gather_params();                 // after the sharded AdamW
  void queue_gathers();                 // its all-gathers (and, overlapped, their marks)
  bool gather_deferred_ = false;        // --overlap-param-gather: queued at the first need
  // Backend::shards_master: rank q's pieces pass through the backend's staging, a chunk of at
  // most options.gather_chunk elements per rank at a time: gather_chunks calls f(begin, m,
  // piece, i) after each chunk's all-gather (rank q's m elements belong at begin + q·piece) and
  // then after bucket i's last chunk with m = 0.
  template <class F>
  void gather_chunks(float* staging, F&& f);
  void full_params(float* host);        // get_params's collective (Backend::set_full_params)
  void grads_ready(size_t begin);       // Backend::set_grads_ready's callback
  void params_needed(size_t end);       // Backend::set_params_needed's callback
  bool overlap_grads_ = false, overlap_params_ = false;
  size_t unreduced_ = 0;  // buckets [0, unreduced_) not yet queued for reduction this step
  size_t ungathered_ = 0;  // buckets [ungathered_, nb) the compute has not waited for yet
  // What the hooks advance (grads_ready, params_needed), and with it params_pending: a graph
  // replays from the state its capture started in and leaves the state its capture's hooks left.
  struct HookState {
    size_t unreduced = 0, ungathered = 0;
    bool gather_deferred = false;
    bool operator==(const HookState&) const = default;
  };
  HookState hook_state() const { return {unreduced_, ungathered_, gather_deferred_}; }
  void set_hook_state(const HookState& s);
  struct Capture {
    HookState before, after;
    std::vector<std::string> collectives;  // Communicator::end_capture's names
  };
  std::map<int, Capture> captures_;  // by the backend's graph key
  HookState capture_start_;          // capture_begin's state
  Backend& be_;
  BucketPlan plan_;
  DistEnv env_;
  DataParallelOptions opt_;
  std::vector<float> host_piece_;  // the CPU's reduce-scatter output
};

}  // namespace gpt
