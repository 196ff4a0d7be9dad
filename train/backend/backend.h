// One interface for the device that runs the model: cpu (fp32 reference, train/backend/cpu/) and
// cuda (train/backend/cuda/ + kernels/, built only with nvcc; GPT_HAVE_CUDA).
//
// A backend owns the parameters, gradients, AdamW moments and activations of one model replica
// for a fixed micro-batch shape [B, T]. The host drives it one micro-batch at a time:
//   zero_grad(); for each micro-batch: forward_backward(...); norm = grad_norm(); adamw_step(...)
// Host-side copies (get_/set_) exist for checkpoints, export and tests; they are not per-step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_config.h"
#include "train/dist/communicator.h"
#include "train/model/config.h"
#include "train/model/layout.h"

namespace gpt {

struct BackendOptions {
  std::string device = "cpu";      // cpu | cuda
  int micro_batch = 1;             // B
  bool bf16 = false;               // mixed precision request (CUDA backend; CPU computes fp32)
  bool fp16 = false;
  bool recompute_activations = false;
  // --bf16: the first N layers recompute their GELU output (fc2's input) in backward instead of
  // keeping it; -1: every layer. Each kept layer holds B·T·ffn bf16 more.
  int recompute_gelu_layers = -1;
  float hidden_dropout = 0.0f;     // --hidden-dropout: embeddings, attention and MLP outputs
  float attention_dropout = 0.0f;  // --attention-dropout: the softmax probabilities
  // CUDA: rows of the output layer per chunk (bounds the logits: 4096 × 50304 bf16 are 412 MB;
  // fewer, larger chunks re-read the fp32 wte gradient fewer times).
  int classifier_rows = 4096;
  KernelConfig kernels;  // CUDA: which kernel where there is a choice (--cuda-graphs, ...)
  // Data parallelism: zeroed elements after layout.total() in the flat parameter, gradient and
  // moment buffers, so that every reduction bucket splits evenly over the ranks.
  size_t flat_padding = 0;
  // --use-distributed-optimizer: the ranges of the flat buffer whose AdamW moments this rank keeps
  // (optimizer_shard.h); empty: all. With ranges, get_optimizer_state gives zeros elsewhere,
  // set_optimizer_state reads only them, and adamw_range may only cover them.
  std::vector<std::pair<size_t, size_t>> optimizer_shard = {};
  // With optimizer_shard and --bf16 (the distributed optimizer's fp32 master weights sharded):
  // the fp32 parameters are kept only in those ranges (and, on CUDA, wherever the bf16 compute
  // reads fp32: embeddings, LayerNorms, biases); the bf16 copy holds the matmul weights. See
  // Backend::shards_master.
  bool shard_master = false;
  // CUDA, --bf16 without optimizer_shard: the matmul weights' fp32 masters are held as their bf16
  // copy plus a low half (2 bytes per parameter less); false keeps an fp32 array beside the copy.
  bool split_master = true;
  // Every step is one micro-batch, and this backend is the whole model in one process (no data,
  // tensor or pipeline parallelism): with split masters and the matmul weights' gradients packed
  // in bf16 (--bf16-weight-grads), the second half of each such gradient's fp32 storage is never
  // written, and holds the masters' low halves instead of a buffer of their own. A second
  // micro-batch in a step is then an error.
  bool one_micro_batch_steps = false;
  // Tensor and pipeline parallelism: which part of the model this rank runs (StageSpec is defined
  // in train/model/layout.h; the layout passed to make_backend must be ParamLayout(config, stage)).
  // The default is the whole model, and then every backend behaves as without these fields.
  StageSpec stage = {};
  // The TP group (stage.tp_size ranks, ordered by tp_rank) for the collectives inside the layers;
  // required when stage.tp_size > 1. Not owned; it must outlive the backend.
  dist::Communicator* tp_comm = nullptr;
  // Micro-batches whose activations a pipeline stage holds at once (stage_forward's slots
  // 0 .. pipeline_slots-1): up to P with 1F1B, more with the interleaved schedule.
  int pipeline_slots = 1;
  // CUDA: the stream to queue on instead of a new one (not owned). The interleaved schedule's
  // model chunks share chunk 0's, where the pipeline transfers land: a chunk's forward then
  // follows the receive of its input.
  void* cuda_stream = nullptr;
};

struct AdamWConfig {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
};

struct MemoryStats {
  double allocated_mb = 0, max_allocated_mb = 0, reserved_mb = 0, max_reserved_mb = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Which attention implementation the training step runs, and why where there is a choice
  // (gpt-train prints it at start; empty: nothing to say).
  virtual std::string attention_path() const { return {}; }

  // Parameters and optimizer state as host fp32 arrays of layout.total() elements.
  virtual void set_params(const float* host) = 0;
  virtual void get_params(float* host) const = 0;
  virtual void set_optimizer_state(const float* m, const float* v) = 0;
  virtual void get_optimizer_state(float* m, float* v) const = 0;
  virtual void get_grads(float* host) const = 0;

  virtual void zero_grad() = 0;
  // Key of the dropout masks of the next forward_backward (dropout_mask.h); forward_loss
  // (evaluation) never drops.
  void set_dropout_key(uint64_t key) { dropout_key_ = key; }
  // One micro-batch: inputs/targets are [B, T] host token ids. Accumulates dL/dθ · loss_weight
  // per token into the gradients (loss_weight = 1 / (B·T·grad_accum) gives the mean over the
  // global batch). Returns the mean loss over this micro-batch's B·T tokens.
  virtual float forward_backward(const int* inputs, const int* targets, float loss_weight) = 0;
  // Forward only (evaluation): mean loss over the micro-batch.
  virtual float forward_loss(const int* inputs, const int* targets) = 0;
  // L2 norm of all gradients (deterministic). With stage.tp_size > 1 the norm over the TP group
  // (each rank's shards, replicated tensors counted once); a last pipeline stage leaves out its
  // tied word embedding (layout.counts_in_norm). Never over pipeline stages or DP: the global
  // norm is sqrt(Σ over stages of grad_norm()²), the stages' TP groups each calling it.
  virtual double grad_norm() = 0;
  // AdamW over all parameters; weight decay only on weights and embeddings (not biases, norms).
  // grad_scale multiplies the gradients first (clipping). step is 1-based.
  virtual void adamw_step(const AdamWConfig& config, float lr, int step, float grad_scale) = 0;

  // A training step's micro-batches and update, as the trainer runs them. queue_micro_batch is
  // forward_backward whose loss (divided by `accum`, the step's micro-batch count) is added to
  // the step's loss; end_step then measures the gradient norm (divided by loss_scale, the fp16
  // loss scale or 1) and, when it and the step's loss are finite, runs AdamW with the gradients
  // clipped to clip_grad (0: no clipping) and divided by loss_scale. These defaults call the
  // functions above in that order; the CUDA backend decides on the device and waits only for the
  // loss and norm while the update runs, so the GPU never waits for the host within a step.
  struct StepEnd {
    double loss = 0.0, norm = 0.0;
    bool updated = false;  // false: the loss or the norm was not finite, nothing was changed
  };
  virtual void queue_micro_batch(const int* inputs, const int* targets, float loss_weight,
                                 int accum) {
    reduce_in_backward_ = last_micro_batch(accum);
    step_loss_ += forward_backward(inputs, targets, loss_weight) / accum;
    reduce_in_backward_ = false;
  }
  virtual StepEnd end_step(const AdamWConfig& config, float lr, int step, float clip_grad,
                           double loss_scale);

  virtual MemoryStats memory() const = 0;
  // Dense bf16/fp32 peak of the device in TFLOP/s for MFU, 0 when unknown (CPU).
  virtual double peak_tflops() const = 0;
  // Starts / stops the device profiler's capture range (--profile); nothing on the CPU.
  virtual void profiler(bool on) {}
  // Waits until the device has run everything queued (--timing-log-level); nothing on the CPU.
  virtual void synchronize() {}

  // ---- Pipeline stages (train/loop/pipeline_parallel.h drives these; BackendOptions::stage).
  // forward_backward(inputs, targets, w) of the whole model is stage_forward(0, ...) followed by
  // stage_backward(0, ..., w); a stage is the same computation cut at its layer range.
  //
  // The activation passed between stages is the residual stream after the stage's last layer:
  // [B·T, C] row-major, or with sequence parallelism this TP rank's rows [tp_rank·B·T/tp, ...)
  // of it. Its gradient has the same shape. On the CPU: fp32 host memory; on CUDA: device memory
  // in the compute dtype (bf16 with --bf16), ordered on the backend's stream: the passes below
  // return with their work queued there, where the executor's NCCL transfers queue too, so the
  // host does not wait between them (another stream, or the host, waits for that stream first).
  virtual size_t stage_activation_elements() const;
  virtual dist::DType stage_activation_dtype() const;
  // Forward of one micro-batch in slot `slot` (0 .. pipeline_slots-1; a slot must be free: its
  // earlier forward has had its stage_backward). The first stage reads `inputs` (host token ids
  // [B, T]); the others read act_in (copied: the buffer is free afterwards, in stream order). The
  // dropout key set before this call is kept with the slot. Non-last stages write act_out. The
  // last stage computes the loss on `targets` (host [B, T]) and returns its mean over the
  // micro-batch's B·T tokens (the same on every TP rank); other stages return 0.
  virtual float stage_forward(int slot, const int* inputs, const int* targets, const void* act_in,
                              void* act_out);
  // Backward of the micro-batch in `slot`, which is free afterwards. The last stage starts from its
  // loss with loss_weight per token (as forward_backward's); the others from dact_out (the next
  // stage's dact_in). Non-first stages write dact_in. Gradients accumulate into the flat grads as
  // forward_backward's do, TP and sequence-parallel reductions included; the tied word
  // embedding's gradient of the first and of the last stage (layout.wte(), wte_numel()) are each
  // only that stage's part: the executor sums them over the embedding group.
  virtual void stage_backward(int slot, const void* dact_out, void* dact_in, float loss_weight);
  // Forward only, no dropout, no slot kept (evaluation): as stage_forward otherwise.
  virtual float stage_forward_loss(const int* inputs, const int* targets, const void* act_in,
                                   void* act_out);
  // Activation buffers owned by the backend for the executor's sends and receives, each
  // stage_activation_elements() of stage_activation_dtype() in backend memory:
  // stage_buffer(i) for i in [0, stage_buffer_count()) = 2·pipeline_slots + 2, stable for the
  // backend's lifetime. The executor decides which one holds what.
  virtual void* stage_buffer(int which);
  int stage_buffer_count() const { return 2 * pipeline_slots_ + 2; }

  // ---- Data parallelism (train/loop/data_parallel.h drives these; one process per replica).
  // The trainer queues the micro-batches as usual, then instead of end_step: take_step_loss,
  // prepare_grads_for_reduce, the communicator's collectives on flat_buffers(), the norm from
  // grad_sum_squares over shard ranges, adamw_range over this rank's shard (or everything), and,
  // after the parameters were all-gathered in place, params_changed.
  struct FlatBuffers {
    // layout.total() + BackendOptions::flat_padding fp32 elements each; host memory on the CPU,
    // device memory on CUDA, where work on them must be ordered after `stream` (a cudaStream_t).
    float* params = nullptr;
    float* grads = nullptr;
    bool on_device = false;
    void* stream = nullptr;
  };
  virtual FlatBuffers flat_buffers() = 0;
  // The mean loss of the micro-batches queued since the last step (what end_step reports); resets it.
  virtual double take_step_loss();
  // Makes grads hold every gradient of the step in fp32, and waits until they are complete (a
  // communicator on another stream may read them next).
  virtual void prepare_grads_for_reduce() {}
  // Sum of squares of grads[begin, end) in double; the same bits for the same values and range.
  virtual double grad_sum_squares(size_t begin, size_t end) = 0;
  // out[i] = grad_sum_squares(ranges[i]), the same bits (CUDA: one wait for all of them).
  virtual void grad_sum_squares(const std::vector<std::pair<size_t, size_t>>& ranges, double* out) {
    for (size_t i = 0; i < ranges.size(); ++i)
      out[i] = grad_sum_squares(ranges[i].first, ranges[i].second);
  }
  // AdamW (as adamw_step) over the elements [begin, end) of the flat buffers only.
  virtual void adamw_range(const AdamWConfig& config, float lr, int step, float grad_scale,
                           size_t begin, size_t end) = 0;
  // Data parallelism's end of step decided on the device (CUDA), so that the host does not wait
  // for the backward before it queues AdamW: queue_step_sums writes [0] the step's local loss
  // (and resets it, as take_step_loss), [1, 1 + n_head) the host's head values and
  // [slots[i]] grad_sum_squares(ranges[i]) into a device vector of n doubles, zero elsewhere,
  // and returns it; the caller sums it over the ranks on the device; queue_step_decision decides
  // from it as the host would (data_parallel.cpp: step_decision, step_grad_scale; the squares
  // from first_square on); adamw_range_decided is adamw_range with the decided factor (no
  // change when the step is skipped); read_step_decision waits for the decision only, and gives
  // the summed head values back. device_step_end(): whether these apply to the step under way.
  virtual bool device_step_end() const { return false; }
  virtual double* queue_step_sums(const std::vector<std::pair<size_t, size_t>>& ranges,
                                  const std::vector<size_t>& slots, size_t n, const double* head,
                                  size_t n_head);
  virtual void queue_step_decision(const double* sums, size_t n, size_t first_square,
                                   int data_parallel, float clip_grad, double loss_scale);
  virtual void adamw_range_decided(const AdamWConfig& config, float lr, int step, size_t begin,
                                   size_t end);
  virtual StepEnd read_step_decision(double* head, size_t n_head);
  // params were overwritten (all-gathered): refresh what is derived from them (the bf16 copy).
  virtual void params_changed() {}
  // --grad-reduce-in-bf16: grads[begin, end) rounded to bf16 into a scratch owned by the backend
  // (room for `capacity` elements, kept between calls); returns it. from_bf16 widens
  // scratch[0, end - begin) back into grads[begin, end).
  virtual void* grads_to_bf16(size_t begin, size_t end, size_t capacity) = 0;
  virtual void grads_from_bf16(const void* scratch, size_t begin, size_t end) = 0;
  // --overlap-grad-reduce: during the backward of each step's last micro-batch (the accum-th
  // queue_micro_batch since the previous last one), the backend calls ready(begin) whenever the
  // gradients at [begin, the end of the flat buffers) are final and fp32: after each layer (the
  // layers run in reverse, the layout is per layer) and ready(0) after the embeddings. ready
  // queues the reductions of the buckets that are complete, on the CPU at once (synchronously),
  // on CUDA on comm_stream() after comm_waits_for_compute(). An empty function: off.
  void set_grads_ready(std::function<void(size_t begin)> ready) {
    grads_ready_ = std::move(ready);
  }
  // --overlap-param-gather: while params_pending(true) holds, the forward calls needed(end)
  // before it first reads the parameters [0, end) (the embeddings, each layer, the final
  // LayerNorm), so that the caller can make the compute wait for the all-gathers of those
  // buckets only; needed(total) ends it with params_pending(false). Reads of the parameters
  // by the host (get_params) wait for the communication stream meanwhile.
  void set_params_needed(std::function<void(size_t end)> needed) {
    params_needed_ = std::move(needed);
  }
  void params_pending(bool on) { params_pending_ = on; }
  // CUDA step graphs (cuda_backend.h): a micro-batch whose hooks above queue collectives is
  // captured into a graph with them and later replayed without calling them. The hooks' owner
  // (DataParallel) keeps what each capture did and repeats its effect at each replay, so that its
  // state and the communicator's count of collectives end as an eager micro-batch leaves them.
  class CapturedHooks {
   public:
    virtual ~CapturedHooks() = default;
    // Around the capture of graph `key` (the hooks run, their collectives go into the capture and
    // nothing is issued): capture_end puts the hooks' state back as capture_begin found it and
    // keeps the record under key. A collective: every rank captures the same micro-batch, and the
    // result says whether every rank's capture succeeded (ok), since each rank must use the graph
    // of a captured collective or none may. false: nothing kept.
    virtual void capture_begin() = 0;
    virtual bool capture_end(int key, bool ok) = 0;
    // Whether graph `key` may replay now: the hooks are in the state its capture started from.
    virtual bool can_replay(int key) const = 0;
    // Graph `key` was launched on `stream`: the state as after its capture's hooks, and its
    // collectives issued (Communicator::issue_captured).
    virtual void replayed(int key, void* stream) = 0;
  };
  void set_captured_hooks(CapturedHooks* hooks) { captured_hooks_ = hooks; }
  // CUDA: a second stream for the overlapped collectives (nullptr: they run on the caller's
  // thread when issued, the CPU). comm_waits_for_compute orders the communication stream after
  // the work queued so far on the compute stream, compute_waits_for_comm the other way round;
  // mark_comm(i) records point i of the communication stream (after the collectives queued so
  // far) and compute_waits_for_mark(i) orders the compute stream after it.
  virtual void* comm_stream() { return nullptr; }
  virtual void comm_waits_for_compute() {}
  virtual void compute_waits_for_comm() {}
  virtual void mark_comm(size_t i) {}
  virtual void compute_waits_for_mark(size_t i) {}
  // params[begin, end) were all-gathered on the communication stream: refresh the bf16/fp16 copy
  // of that range there (CUDA); the default refreshes everything (params_changed).
  virtual void params_changed_on_comm(size_t begin, size_t end) { params_changed(); }
  // BackendOptions::shard_master: params holds this rank's owned ranges only (in fp32; CUDA maps
  // no memory under most of the rest). The all-gather after AdamW and get_params's then go
  // through a staging of n = D x m elements (gather_staging: device memory on CUDA, kept between
  // calls): rank q's chunk staging[q·m, (q+1)·m) belongs at flat [begin + q·stride, + m), cut
  // at layout.total(). params_from_staging stores it into the compute copy (CUDA: the bf16
  // copy, and the fp32 elements it keeps; on the communication stream when on_comm);
  // read_staging copies the staging to the host. get_params calls full(host), a collective
  // (every rank calls get_params), set with set_full_params.
  virtual bool shards_master() const { return false; }
  virtual float* gather_staging(size_t n) = 0;
  virtual void params_from_staging(const float* staging, int D, size_t m, size_t begin,
                                   size_t stride, bool on_comm) = 0;
  virtual void read_staging(float* host, const float* staging, size_t n) = 0;
  void set_full_params(std::function<void(float* host)> full) { full_params_ = std::move(full); }

 protected:
  uint64_t dropout_key_ = 0;
  double step_loss_ = 0.0;  // the queued micro-batches' share of the step's loss
  // Overlapped data parallelism (set_grads_ready, set_params_needed).
  std::function<void(size_t)> grads_ready_, params_needed_;
  std::function<void(float*)> full_params_;  // set_full_params
  bool reduce_in_backward_ = false;  // the micro-batch being queued calls grads_ready_
  bool params_pending_ = false;      // the forward calls params_needed_
  CapturedHooks* captured_hooks_ = nullptr;  // set_captured_hooks (not owned)
  int step_micro_batches_ = 0;
  // Counts a queued micro-batch: whether it is the step's last and reductions are overlapped.
  bool last_micro_batch(int accum) {
    if (++step_micro_batches_ < accum) return false;
    step_micro_batches_ = 0;
    return bool(grads_ready_);
  }
  // The backward's calls (a no-op unless this micro-batch reduces in its backward); the CUDA
  // backend widens the packed weight gradients of the range first.
  virtual void grads_complete_from(size_t begin) {
    if (reduce_in_backward_) grads_ready_(begin);
  }
  void params_needed(size_t end) {
    if (params_pending_ && params_needed_) params_needed_(end);
  }
  // Host reads of the parameters (get_params): every pending all-gather first.
  void finish_params() const {
    if (params_pending_ && params_needed_) params_needed_(~size_t(0));
  }
  int pipeline_slots_ = 1;  // BackendOptions::pipeline_slots (backends set it)
};

// Makes the backend named by options.device. Throws suite::UsageError for an unknown device and
// suite::ToolError when cuda is asked of a build without CUDA.
std::unique_ptr<Backend> make_backend(const ModelConfig& config, const ParamLayout& layout,
                                      const BackendOptions& options);

// The GPU of a data-parallel rank, made current: the only visible one (a launcher that binds one
// GPU per task), else the local rank's. Returns its PCI bus id. Throws suite::ToolError when the
// local rank has no GPU of its own ("more ranks than GPUs") or none is visible, and in a build
// without CUDA. *device: the CUDA device index.
std::string select_cuda_device(int local_rank, int local_world_size, int* device);

std::unique_ptr<Backend> make_cpu_backend(const ModelConfig& config, const ParamLayout& layout,
                                          const BackendOptions& options);
#ifdef GPT_HAVE_CUDA
// Defined by the CUDA backend (train/backend/cuda/cuda_backend.cu). A plain (strong) reference:
// a weak one would not pull that object out of libtrain.a into gpt-train.
std::unique_ptr<Backend> make_cuda_backend(const ModelConfig& config, const ParamLayout& layout,
                                           const BackendOptions& options);
#endif

}  // namespace gpt
