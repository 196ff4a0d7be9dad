#include "train/loop/trainer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>

#include <xxhash.h>

#include "common/cli/error.h"
#include "kernels/dropout_mask.h"
#include "kernels/ops.h"
#include "train/backend/backend.h"
#include "train/backend/cpu/parallel.h"
#include "train/data/data_setup.h"
#include "train/loop/data_args.h"
#include "train/loop/log_lines.h"
#include "train/loop/loss_scaler.h"
#include "train/loop/pipeline_parallel.h"
#include "train/loop/run_recorder.h"
#include "train/loop/schedule.h"
#include "train/loop/stage_report.h"
#include "train/loop/signals.h"
#include "train/model/checkpoint.h"
#include "train/model/hf.h"
#include "train/model/init.h"

namespace gpt {
namespace {

using Clock = std::chrono::steady_clock;

// Where the backward's gradients become final together (the backends announce each layer's
// start once its backward is done): the data-parallel buckets start there.
std::vector<size_t> layer_starts(const ParamLayout& layout) {
  std::vector<size_t> starts;
  for (int i = 0; i < layout.num_layers(); ++i) starts.push_back(layout.layer(i).ln1_w);
  return starts;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Resident set size now and at peak, in MB (the CPU stand-in for "reserved").
void process_memory(double& rss_mb, double& peak_mb) {
  rss_mb = peak_mb = 0;
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    auto val = [&] { return std::stod(line.substr(line.find(':') + 1)) / 1024.0; };
    if (line.rfind("VmRSS:", 0) == 0) rss_mb = val();
    if (line.rfind("VmHWM:", 0) == 0) peak_mb = val();
  }
}

class Run {
 public:
  Run(const TrainArgs& a, std::ostream& log, const DistEnv* env)
      : a_(a), log_(log), env_(env ? *env : DistEnv{}), null_log_(nullptr) {
    W_ = env_.world_size;
    mp_ = env_.model_parallel;
    D_ = mp_ ? mp_->layout.data : W_;
    dp_rank_ = mp_ ? mp_->coord.dp : env_.rank;
    if (W_ > 1 && a_.data_parallel_size != D_)
      throw suite::ToolError("data-parallel size " + std::to_string(a_.data_parallel_size) +
                             " in the arguments, world size " + std::to_string(D_) +
                             " (an internal error: apply_data_parallel was not called)");
  }
  // The interleaved schedule's chunks 1.. queue on be_'s CUDA stream: they go before it.
  ~Run() {
    chunk_dps_.clear();
    chunk_backends_.clear();
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  TrainResult go();

 private:
  void setup();
  double evaluate();
  void save();
  void save_to(const std::string& dir);
  // Data parallelism: whether this rank prints the step's lines (the last rank, as Megatron);
  // the sum over ranks (host); whether every rank passed ok (a barrier).
  std::ostream& out_last() { return env_.rank == W_ - 1 ? log_ : null_log_; }
  std::ostream& out_first() { return env_.rank == 0 ? log_ : null_log_; }
  void host_sum(double* v, size_t n) {
    if (W_ > 1) env_.host_sum(v, n);
  }
  bool all_ok(bool ok) {
    double v = ok ? 0.0 : 1.0;
    host_sum(&v, 1);
    return v == 0.0;
  }
  uint64_t params_hash();
  // The per-stage report of a log interval (every rank calls it): the stages' lines on the last
  // rank, the figures in the metrics record.
  void stage_report_interval(IntervalRecord& rec, int64_t iterations, int micro_batches);

  const TrainArgs& a_;
  std::ostream& log_;
  DistEnv env_;
  std::ostream null_log_;  // no buffer: what other ranks would print twice
  int W_ = 1, D_ = 1, dp_rank_ = 0;  // world size, data-parallel size and index
  const ModelParallelEnv* mp_ = nullptr;  // T·P > 1
  std::unique_ptr<PipelineParallel> pipe_;  // P > 1
  std::vector<std::unique_ptr<PassClock>> pass_clocks_;  // P > 1: per model chunk, the report's
  // The interleaved schedule's model chunks 1 .. V-1 of this stage (chunk 0 is be_).
  std::vector<std::unique_ptr<ParamLayout>> chunk_layouts_;
  std::vector<std::unique_ptr<Backend>> chunk_backends_;
  // With the distributed optimizer: each chunk's buckets and DataParallel (chunk 0's are plan_
  // and dp_); every chunk's DataParallel, in chunk order, for the step end.
  std::vector<BucketPlan> chunk_plans_;
  std::vector<std::unique_ptr<DataParallel>> chunk_dps_;
  std::vector<DataParallel*> all_chunk_dps_;
  double pipe_loss_ = 0;
  double loss_share_ = 1.0;  // this rank's part of a model replica's loss in the world's sums
  BucketPlan plan_;
  std::unique_ptr<DataParallel> dp_;
  uint64_t rng_seed_ = 0;  // dropout: the checkpoint's seed on resume, else --seed
  ModelConfig cfg_;
  std::unique_ptr<ParamLayout> layout_;
  std::unique_ptr<Backend> be_;
  DataSplits data_;
  TrainState st_;
  std::unique_ptr<LossScaler> scaler_;  // --fp16 only
  LrSchedule sched_;
  int64_t train_iters_ = 0;
  std::vector<int> inputs_, targets_;
  std::vector<int> step_inputs_, step_targets_;  // the pipeline's micro-batches of one step
  std::unique_ptr<RunRecorder> recorder_;  // metrics file and TensorBoard events
  TrainResult result_;
};

void Run::setup() {
  if (a_.cpu_threads > 0) cpu::set_num_threads(a_.cpu_threads);
  if (W_ > 1)
    log_ << " > rank " << env_.rank << " of " << W_ << ": host " << env_.host << ", local rank "
         << env_.local_rank << ", device " << env_.device_id << ", data-parallel index "
         << dp_rank_ << (mp_ ? " " + mp_->layout.coord_text(env_.rank) : std::string()) << "\n"
         << std::flush;
  cfg_ = a_.model;
  train_iters_ = total_train_iters(a_);
  sched_ = LrSchedule::from_args(a_);
  // Data first: missing files and vocabulary problems are reported before any compute.
  const DataConfig data_cfg = data_config(a_, train_iters_);
  data_ = open_data(data_cfg);
  for (const std::string& line : data_summary(data_cfg)) out_first() << line << "\n";
  cfg_.vocab_size = data_.vocab_size;
  cfg_.padded_vocab_size =
      pad_vocab(cfg_.vocab_size, a_.tensor_parallel, a_.make_vocab_size_divisible_by);
  cfg_.validate();

  Checkpoint loaded;
  const bool resume = !a_.load.empty() && has_checkpoint(a_.load);
  if (!a_.load.empty() && !resume)
    out_first() << "WARNING: could not find the metadata file " << a_.load
         << "/latest_checkpointed_iteration.txt\n    will not load any checkpoints and will start from random\n";
  const int accum = a_.global_batch_size / (a_.micro_batch_size * D_);
  const int V = mp_ ? mp_->layout.virtual_stages : 1;
  layout_ = mp_ ? std::make_unique<ParamLayout>(cfg_, mp_->stage())
                : std::make_unique<ParamLayout>(cfg_);
  // This rank's tensors, whatever layout the checkpoint was saved at (the vocabulary rows padded
  // or trimmed).
  if (resume) loaded = load_checkpoint(a_.load, cfg_, *layout_);
  plan_ = plan_buckets(layout_->total(), D_, ddp_bucket_size(a_), layer_starts(*layout_));
  BackendOptions bo;
  bo.flat_padding = plan_.padded - plan_.numel;
  if (D_ > 1 && a_.use_distributed_optimizer) bo.optimizer_shard = plan_.owned(dp_rank_);
  // Megatron's distributed optimizer: with bf16 compute weights the fp32 master is sharded too.
  bo.shard_master = D_ > 1 && a_.use_distributed_optimizer && a_.bf16;
  if (mp_) {
    bo.stage = mp_->stage();
    bo.tp_comm = mp_->tensor;
    bo.pipeline_slots = PipelineParallel::slots(mp_->layout, mp_->coord.pp, accum);
    // One rank of each model replica adds the loss to the world's sums.
    loss_share_ = mp_->last_stage() && mp_->coord.tp == 0 ? 1.0 : 0.0;
  }
  bo.device = a_.device;
  bo.micro_batch = a_.micro_batch_size;
  bo.bf16 = a_.bf16;
  bo.fp16 = a_.fp16;
  bo.recompute_activations = a_.recompute_activations;
  bo.recompute_gelu_layers = a_.recompute_gelu_layers;
  bo.classifier_rows = a_.classifier_rows;
  bo.hidden_dropout = a_.hidden_dropout;
  bo.attention_dropout = a_.attention_dropout;
  bo.kernels = a_.kernels;
  bo.one_micro_batch_steps = accum == 1 && W_ == 1;
  be_ = make_backend(cfg_, *layout_, bo);
  std::vector<PipelineParallel::Chunk> chunks{{be_.get(), layout_.get()}};
  for (int c = 1; c < V; ++c) {
    // The interleaved schedule's further model chunks of this stage, a backend each.
    chunk_layouts_.push_back(std::make_unique<ParamLayout>(cfg_, mp_->stage(c)));
    BackendOptions co = bo;
    co.stage = mp_->stage(c);
    co.flat_padding = 0;
    co.cuda_stream = be_->flat_buffers().stream;
    if (a_.use_distributed_optimizer) {
      // Each chunk's flat buffer sharded over the data-parallel group as chunk 0's is.
      chunk_plans_.push_back(
          plan_buckets(chunk_layouts_.back()->total(), D_, ddp_bucket_size(a_),
                       layer_starts(*chunk_layouts_.back())));
      co.flat_padding = chunk_plans_.back().padded - chunk_plans_.back().numel;
      if (D_ > 1) co.optimizer_shard = chunk_plans_.back().owned(dp_rank_);
    }
    chunk_backends_.push_back(make_backend(cfg_, *chunk_layouts_.back(), co));
    chunks.push_back({chunk_backends_.back().get(), chunk_layouts_.back().get()});
  }
  if (mp_ && mp_->layout.pipeline > 1)
    pipe_ = std::make_unique<PipelineParallel>(chunks, *mp_, accum);
  if (pipe_) {
    std::vector<PassClock*> clocks;
    for (const PipelineParallel::Chunk& c : chunks) {
      pass_clocks_.push_back(make_pass_clock(c.backend->flat_buffers().stream));
      clocks.push_back(pass_clocks_.back().get());
    }
    pipe_->set_pass_clocks(clocks);
  }
  // NCCL: the groups' collectives and transfers queue on the backend's stream (DataParallel may
  // then move its own, the data-parallel group's and the world's, to a second stream).
  if (mp_ && env_.set_stream) {
    const Backend::FlatBuffers buf = be_->flat_buffers();
    if (buf.on_device) env_.set_stream(buf.stream);
  }
  if (W_ > 1 && V == 1) {
    DataParallelOptions dpo;
    dpo.distributed_optimizer = a_.use_distributed_optimizer;
    dpo.reduce_in_bf16 = a_.grad_reduce_in_bf16;
    dpo.overlap_grad_reduce = a_.overlap_grad_reduce;
    dpo.overlap_param_gather = a_.overlap_param_gather;
    DistEnv dp_env = env_;
    if (mp_) {
      // Gradients over the data-parallel group; loss and norm over the world.
      dp_env.comm = mp_->data;
      dp_env.rank = dp_rank_;
      dp_env.world_size = D_;
      dp_env.set_stream = mp_->set_reduction_stream;
      dpo.model_parallel = true;
      dpo.loss_share = loss_share_;
      dpo.norm_ranges = norm_ranges(*layout_);
    }
    dp_ = std::make_unique<DataParallel>(*be_, plan_, dp_env, dpo);
  }
  if (V > 1 && a_.use_distributed_optimizer) {
    // The interleaved schedule with the distributed optimizer: a DataParallel per model chunk over
    // the data-parallel group, one norm and clipping decision for all (DataParallel::end_step of
    // the chunks). The collectives queue on chunk 0's stream as above; no overlap.
    DataParallelOptions dpo;
    dpo.distributed_optimizer = true;
    dpo.reduce_in_bf16 = a_.grad_reduce_in_bf16;
    dpo.model_parallel = true;
    dpo.loss_share = loss_share_;
    DistEnv dp_env = env_;
    dp_env.comm = mp_->data;
    dp_env.rank = dp_rank_;
    dp_env.world_size = D_;
    dp_env.set_stream = nullptr;
    dpo.norm_ranges = norm_ranges(*layout_);
    dp_ = std::make_unique<DataParallel>(*be_, plan_, dp_env, dpo);
    all_chunk_dps_.push_back(dp_.get());
    for (size_t c = 0; c < chunk_backends_.size(); ++c) {
      dpo.norm_ranges = norm_ranges(*chunk_layouts_[c]);
      chunk_dps_.push_back(
          std::make_unique<DataParallel>(*chunk_backends_[c], chunk_plans_[c], dp_env, dpo));
      all_chunk_dps_.push_back(chunk_dps_.back().get());
    }
  }
  if (const std::string path = be_->attention_path(); !path.empty())
    out_first() << "attention: " << path << "\n";
  if (be_->name() == "cpu" && (a_.bf16 || a_.fp16))
    out_first() << "note: --" << (a_.bf16 ? "bf16" : "fp16")
         << " applies to the cuda backend; the cpu backend computes in fp32"
         << (a_.fp16 ? " (loss scaling still applies)" : "") << "\n";
  if (a_.fp16) {
    LossScaler::Config sc;
    sc.dynamic = a_.loss_scale <= 0;
    sc.initial_scale = sc.dynamic ? a_.initial_loss_scale : a_.loss_scale;
    sc.min_scale = a_.min_loss_scale;
    sc.window = a_.loss_scale_window;
    sc.hysteresis = a_.hysteresis;
    scaler_ = std::make_unique<LossScaler>(sc);
  }
  if (be_->name() == "cpu" && a_.recompute_activations)
    out_first() << "note: --recompute-activations applies to the cuda backend; the cpu backend keeps all "
            "activations\n";

  rng_seed_ = a_.seed;
  if (resume) {
    // Megatron's --finetune: the weights only (iteration, optimizer and random state afresh);
    // --no-load-optim: AdamW's moments start at zero; --no-load-rng: dropout follows --seed.
    be_->set_params(loaded.params.data());
    if (!a_.finetune && !a_.no_load_optim)
      be_->set_optimizer_state(loaded.adam_m.data(), loaded.adam_v.data());
    for (size_t c = 0; c < chunk_backends_.size(); ++c) {
      const Checkpoint lc = load_checkpoint(a_.load, cfg_, *chunk_layouts_[c]);
      chunk_backends_[c]->set_params(lc.params.data());
      if (!a_.finetune && !a_.no_load_optim)
        chunk_backends_[c]->set_optimizer_state(lc.adam_m.data(), lc.adam_v.data());
    }
    if (!a_.finetune) {
      st_ = loaded.state;
      if (a_.no_load_optim) st_.adam_step = 0;  // AdamW's bias correction starts again
      if (!a_.no_load_rng) rng_seed_ = loaded.state.seed;
    }
    st_.seed = rng_seed_;
    // A dynamic scaler carries on from the checkpoint (a static --loss-scale is the flag's).
    if (scaler_ && !a_.finetune && a_.loss_scale <= 0 && st_.loss_scale > 0)
      scaler_->restore({st_.loss_scale, st_.loss_scale_growth_tracker,
                        st_.loss_scale_hysteresis_tracker});
    out_first() << " loaded checkpoint from " << a_.load << " at iteration "
                << loaded.state.iteration << (a_.finetune ? " (--finetune: weights only)" : "")
                << (!a_.finetune && a_.no_load_optim ? " (--no-load-optim)" : "") << "\n";
  } else {
    // --init-from-hf: the whole model's tensors, then this rank's shards of them.
    const ParamLayout full(cfg_);
    std::vector<float> all;
    if (!a_.init_from_hf.empty()) {
      all.resize(full.total());
      load_hf(a_.init_from_hf, cfg_, full, all.data());
      out_first() << " initialised from Hugging Face model " << a_.init_from_hf << "\n";
    }
    auto init = [&](const ParamLayout& l, Backend& be) {
      std::vector<float> params(l.total());
      if (!all.empty())
        l.shard_of_full(full, all.data(), params.data());
      else
        init_parameters(params.data(), cfg_, l, a_.seed);
      be.set_params(params.data());
    };
    init(*layout_, *be_);
    for (size_t c = 0; c < chunk_backends_.size(); ++c) init(*chunk_layouts_[c], *chunk_backends_[c]);
    st_.seed = a_.seed;
  }
  out_first() << " > padded vocab (size: " << cfg_.vocab_size << ") with "
       << cfg_.padded_vocab_size - cfg_.vocab_size << " dummy tokens (new size: "
       << cfg_.padded_vocab_size << ")\n";
  out_first() << " > number of parameters: " << cfg_.num_parameters() << "\n";
  if (D_ > 1)
    out_first() << " > data-parallel size " << D_ << ": " << plan_.buckets.size()
                << " gradient bucket(s), " << (a_.grad_reduce_in_bf16 ? "bf16" : "fp32")
                << " reduction" << (a_.use_distributed_optimizer
                                        ? std::string(", distributed optimizer (AdamW state ") +
                                              (be_->shards_master() ? "and fp32 master weights "
                                                                    : "") +
                                              "sharded, " +
                                              std::to_string(plan_.padded - plan_.numel) +
                                              " padding parameters)"
                                        : "")
                << "\n";
  if (dp_ && a_.overlap_grad_reduce && !dp_->overlaps_grad_reduce())
    out_first() << "note: --overlap-grad-reduce with --grad-reduce-in-bf16: the bf16 buckets are "
                   "reduced after the backward pass (same results, no overlap)\n";
  recorder_ = std::make_unique<RunRecorder>(a_, cfg_, be_->name(), env_.rank, W_);
  inputs_.resize(size_t(a_.micro_batch_size) * cfg_.seq_length);
  targets_.resize(inputs_.size());
}

double Run::evaluate() {
  // Each evaluation iteration reads a global batch, rank r its slices as in training.
  const int mbs = a_.micro_batch_size;
  const int accum = a_.global_batch_size / (mbs * D_);
  double sum = 0;
  int64_t n = 0;
  for (int64_t it = 0; it < a_.eval_iters; ++it) {
    for (int m = 0; m < accum; ++m) {
      fill_batch(*data_.valid,
                 st_.consumed_valid_samples + (int64_t(m) * D_ + dp_rank_) * mbs, mbs,
                 cfg_.seq_length, inputs_.data(), targets_.data());
      sum += loss_share_ * (pipe_ ? pipe_->eval_micro_batch(inputs_.data(), targets_.data())
                                  : be_->forward_loss(inputs_.data(), targets_.data()));
      ++n;
    }
    st_.consumed_valid_samples += a_.global_batch_size;
  }
  host_sum(&sum, 1);
  return sum / double(n * D_);
}

void Run::stage_report_interval(IntervalRecord& rec, int64_t iterations, int micro_batches) {
  StageFigures f;
  const dist::ParallelLayout& l = mp_->layout;
  f.stage = mp_->coord.pp;
  // Interleaved: the layers of every chunk (first_layer -1: not one range).
  f.first_layer = l.virtual_stages > 1 ? -1 : l.first_layer(f.stage, 0);
  for (int c = 0; c < l.virtual_stages; ++c) f.num_layers += l.num_layers(f.stage, c);
  f.embedding = mp_->first_stage();
  f.head = mp_->last_stage();
  f.parameters = double(layout_->total());
  for (const auto& c : chunk_layouts_) f.parameters += double(c->total());
  f.max_allocated_mb = rec.memory.max_allocated_mb;
  for (const auto& clock : pass_clocks_) {
    const PassClock::Totals t = clock->take();
    f.passes.forward_ms += t.forward_ms;
    f.passes.backward_ms += t.backward_ms;
    f.passes.forwards += t.forwards;
    f.passes.backwards += t.backwards;
  }
  std::vector<double> all = stage_exchange(f, env_.rank, W_, iterations);
  host_sum(all.data(), all.size());
  const StageReport r =
      stage_report(all, l.pipeline, l.tensor, rec.log.elapsed_ms, micro_batches);
  for (const std::string& line : format_stage_report(r, rec.log.iteration))
    out_last() << line << "\n";
  const double mine =
      iterations > 0 ? (f.passes.forward_ms + f.passes.backward_ms) / double(iterations) : 0;
  rec.stage_compute_ms = mine;
  rec.stage_wait_ms = std::max(0.0, rec.log.elapsed_ms - mine);
  rec.stage_json = stage_report_json(r, f.stage);
}

uint64_t Run::params_hash() {
  std::vector<float> p(layout_->total());
  be_->get_params(p.data());
  return XXH64(p.data(), p.size() * sizeof(float), 0);
}

void Run::save() { save_to(a_.save); }

void Run::save_to(const std::string& dir) {
  Checkpoint c;
  c.model = cfg_;
  c.state = st_;
  if (scaler_) {
    c.state.loss_scale = scaler_->state().scale;
    c.state.loss_scale_growth_tracker = scaler_->state().growth_tracker;
    c.state.loss_scale_hysteresis_tracker = scaler_->state().hysteresis_tracker;
  }
  c.arguments = a_.command_line;
  c.params.resize(layout_->total());
  c.adam_m.resize(layout_->total());
  c.adam_v.resize(layout_->total());
  be_->get_params(c.params.data());
  be_->get_optimizer_state(c.adam_m.data(), c.adam_v.data());
  // Every rank writes its tensors at their global offsets, its pieces of the buckets: its own
  // AdamW shard with the distributed optimizer; with plain DP (all ranks hold everything) the
  // same split shares the writing.
  // The interleaved schedule's chunks (V > 1) are written whole by data-parallel rank 0, or with
  // the distributed optimizer each rank its shard of every chunk.
  SaveChunk first;
  first.layout = layout_.get();
  first.params = c.params.data();
  first.adam_m = c.adam_m.data();
  first.adam_v = c.adam_v.data();
  first.owned = plan_.owned(dp_rank_);
  const bool whole_chunks = !chunk_backends_.empty() && all_chunk_dps_.empty();
  if (whole_chunks) first.owned = {{0, dp_rank_ == 0 ? layout_->total() : 0}};
  std::vector<SaveChunk> chunks{first};
  std::vector<std::vector<float>> bufs(3 * chunk_backends_.size());
  for (size_t k = 0; k < chunk_backends_.size(); ++k) {
    const ParamLayout& l = *chunk_layouts_[k];
    for (size_t w = 0; w < 3; ++w) bufs[3 * k + w].resize(l.total());
    chunk_backends_[k]->get_params(bufs[3 * k].data());
    chunk_backends_[k]->get_optimizer_state(bufs[3 * k + 1].data(), bufs[3 * k + 2].data());
    chunks.push_back({&l, bufs[3 * k].data(), bufs[3 * k + 1].data(), bufs[3 * k + 2].data(),
                      whole_chunks ? std::vector<std::pair<size_t, size_t>>{{0, dp_rank_ == 0
                                                                                    ? l.total()
                                                                                    : 0}}
                                   : chunk_plans_[k].owned(dp_rank_)});
  }
  save_checkpoint(dir, c, chunks, env_.rank, W_, [this](bool ok) { return all_ok(ok); });
  out_first() << "  successfully saved checkpoint from iteration " << std::setw(7) << st_.iteration
       << " to " << dir << "\n";
}

TrainResult Run::go() {
  setup();
  install_exit_signal_handlers();
  const auto start = Clock::now();
  const int mbs = a_.micro_batch_size;
  const int accum = a_.global_batch_size / (mbs * D_);
  // The mean over the global batch: the ranks' gradients are summed.
  const float loss_weight = 1.0f / float(int64_t(mbs) * cfg_.seq_length * accum * D_);
  const bool can_eval = a_.eval_iters > 0 && data_.valid && data_.valid->size() > 0;
  if (a_.eval_iters > 0 && !can_eval)
    out_first() << " > validation split is empty; skipping evaluation\n";
  AdamWConfig adam{float(a_.adam_beta1), float(a_.adam_beta2), float(a_.adam_eps),
                   float(a_.weight_decay)};
  // interval accumulators (Megatron averages over the log interval)
  double interval_loss = 0, last_norm = -1;
  int64_t interval_iters = 0, interval_ok = 0, interval_nan = 0;
  auto interval_start = Clock::now();
  bool memory_reported = false, saved_now = false;
  // --timing-log-level: this interval's forward-backward and optimizer milliseconds, each phase
  // ended by waiting for the device.
  const bool timers = a_.timing_log_level >= 0;
  double fb_ms = 0, opt_ms = 0;
  auto device_sync = [&] {
    be_->synchronize();
    for (auto& c : chunk_backends_) c->synchronize();
  };
  // --profile (Megatron's step semantics: iteration indices [start, end) counted from 0).
  const bool profile = a_.profile && std::find(a_.profile_ranks.begin(), a_.profile_ranks.end(),
                                               env_.rank) != a_.profile_ranks.end();
  bool profiling = false;
  auto stop_profiler = [&] {
    be_->profiler(false);
    profiling = false;
    log_ << " > profiler stopped after iteration " << st_.iteration << "\n";
  };

  while (st_.iteration < train_iters_) {
    if (profile && st_.iteration == a_.profile_step_start) {
      log_ << " > profiler started before iteration " << st_.iteration + 1 << "\n";
      be_->profiler(true);
      profiling = true;
    }
    const float lr = float(sched_.at(st_.adam_step * a_.global_batch_size));
    // fp16: the loss gradient is scaled up, the gradients are scaled back down in the optimizer
    const double scale = scaler_ ? scaler_->scale() : 1.0;
    be_->zero_grad();
    for (auto& c : chunk_backends_) c->zero_grad();
    const auto step_start = Clock::now();
    if (pipe_) {
      // Every micro-batch of the step at once: the schedule interleaves their passes.
      const size_t mb_tokens = size_t(mbs) * cfg_.seq_length;
      step_inputs_.resize(mb_tokens * accum);
      step_targets_.resize(step_inputs_.size());
      std::vector<const int*> in(accum), tg(accum);
      for (int m = 0; m < accum; ++m) {
        fill_batch(*data_.train,
                   st_.consumed_train_samples + (int64_t(m) * D_ + dp_rank_) * mbs, mbs,
                   cfg_.seq_length, step_inputs_.data() + m * mb_tokens,
                   step_targets_.data() + m * mb_tokens);
        in[m] = step_inputs_.data() + m * mb_tokens;
        tg[m] = step_targets_.data() + m * mb_tokens;
      }
      const double step_loss =
          pipe_->train_step(in, tg, float(double(loss_weight) * scale), [&](int m, Backend& be) {
            be.set_dropout_key(
                dropout_step_key(rng_seed_, st_.iteration, int(int64_t(m) * D_ + dp_rank_)));
          });
      if (dp_) dp_->set_step_loss(step_loss);
      for (auto& d : chunk_dps_) d->set_step_loss(0.0);  // the loss is counted once, by chunk 0
      pipe_loss_ = step_loss;
    }
    for (int m = 0; m < accum && !pipe_; ++m) {
      // Megatron's pretraining sampler: rank r reads [c + (m·D + r)·mbs, +mbs) of the global
      // sample order, which therefore does not depend on D.
      const int64_t slot = int64_t(m) * D_ + dp_rank_;
      fill_batch(*data_.train, st_.consumed_train_samples + slot * mbs, mbs, cfg_.seq_length,
                 inputs_.data(), targets_.data());
      be_->set_dropout_key(dropout_step_key(rng_seed_, st_.iteration, int(slot)));
      be_->queue_micro_batch(inputs_.data(), targets_.data(), float(double(loss_weight) * scale),
                             accum);
    }
    auto optimizer_start = step_start;
    if (timers) {
      device_sync();
      optimizer_start = Clock::now();
      fb_ms += std::chrono::duration<double, std::milli>(optimizer_start - step_start).count();
    }
    // The ranks' stop votes (--exit-duration-in-mins, a signal; this rank's signal number kept):
    // with data parallelism alone they are summed with the step's own sums (a collective of
    // their own would make the host wait for the step's end), otherwise below, after the
    // iteration's work.
    double own_signal = 0;
    auto stop_votes = [&] {
      own_signal = double(exit_signal_received());
      return std::array<double, 2>{
          a_.exit_duration_in_mins > 0 && ms_since(start) / 60000.0 > a_.exit_duration_in_mins
              ? 1.0 : 0.0,
          own_signal > 0 ? 1.0 : 0.0};
    };
    const bool votes_in_step = dp_ && !mp_ && W_ > 1 && st_.iteration + 1 < train_iters_;
    std::array<double, 2> votes{};
    if (votes_in_step) votes = stop_votes();
    // The gradient norm, clipping and AdamW; an overflow (inf/nan loss or gradients) skips the
    // update, as Megatron's found_inf does.
    // With data parallelism the reduction, norm and decision are global (the same on every rank).
    const Backend::StepEnd end =
        !all_chunk_dps_.empty()
            ? DataParallel::end_step(all_chunk_dps_, adam, lr, int(st_.adam_step + 1),
                                     float(a_.clip_grad), scale)
        : !chunk_backends_.empty()
            ? pipe_->end_step(adam, lr, int(st_.adam_step + 1), float(a_.clip_grad), scale,
                              pipe_loss_, loss_share_, env_.host_sum)
        : dp_ ? dp_->end_step(adam, lr, int(st_.adam_step + 1), float(a_.clip_grad), scale,
                              votes_in_step ? votes.data() : nullptr,
                              votes_in_step ? votes.size() : 0)
              : be_->end_step(adam, lr, int(st_.adam_step + 1), float(a_.clip_grad), scale);
    if (timers) {
      device_sync();
      opt_ms += ms_since(optimizer_start);
    }
    const double loss = end.loss, norm = end.norm;
    const bool loss_nan = !std::isfinite(loss), found_inf = !end.updated;
    if (scaler_) scaler_->update(found_inf);
    if (found_inf) {
      ++st_.skipped_iterations;
      if (loss_nan) ++st_.nan_iterations, ++interval_nan;
    } else {
      ++st_.adam_step;
      interval_loss += loss;
      ++interval_ok;
    }
    last_norm = found_inf ? -1.0 : norm;
    st_.consumed_train_samples += a_.global_batch_size;
    ++st_.iteration;
    ++interval_iters;
    result_.losses.push_back(loss);
    saved_now = false;
    recorder_->step({st_.iteration, st_.consumed_train_samples, a_.global_batch_size,
                     found_inf ? NAN : loss, sched_.at(st_.adam_step * a_.global_batch_size),
                     scaler_ ? scaler_->scale() : 1.0, last_norm});

    if (st_.iteration % a_.log_interval == 0 || st_.iteration == train_iters_) {
      IterationLog l;
      l.iteration = st_.iteration;
      l.train_iters = train_iters_;
      l.consumed_samples = st_.consumed_train_samples;
      l.elapsed_ms = ms_since(interval_start) / double(interval_iters);
      l.learning_rate = sched_.at(st_.adam_step * a_.global_batch_size);
      l.global_batch_size = a_.global_batch_size;
      l.lm_loss = interval_ok ? interval_loss / interval_ok : -1.0;
      l.grad_norm = last_norm;
      l.skipped_iterations = interval_iters - interval_ok;
      l.nan_iterations = interval_nan;
      l.loss_scale = scaler_ ? scaler_->scale() : 1.0;
      l.tokens_per_second =
          double(a_.global_batch_size) * cfg_.seq_length / (l.elapsed_ms / 1000.0);
      // Per GPU (Megatron's TFLOP/s/GPU), so that MFU compares with one device's peak.
      l.tflops = cfg_.flops_per_token() * l.tokens_per_second / 1e12 / W_;
      const double peak = be_->peak_tflops();
      l.mfu_percent = peak > 0 ? 100.0 * l.tflops / peak : -1.0;
      out_last() << format_iteration(l) << "\n";
      MemoryStats ms = be_->memory();
      if (be_->name() == "cpu") process_memory(ms.reserved_mb, ms.max_reserved_mb);
      IntervalRecord rec;
      rec.log = l;
      rec.memory = ms;
      if (pipe_) stage_report_interval(rec, interval_iters, accum);
      recorder_->interval(rec);
      if (!memory_reported) {
        log_ << format_memory(st_.iteration, ms.allocated_mb, ms.max_allocated_mb, ms.reserved_mb,
                              ms.max_reserved_mb, env_.rank)
             << "\n";
        memory_reported = true;
      }
      if (a_.log_params_hash) {
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)params_hash());
        log_ << " params hash: rank " << env_.rank << " iteration " << st_.iteration << " " << hex
             << "\n";
      }
      if (timers) {
        // Megatron's "(min, max) time across ranks", per iteration of the interval.
        const double n = double(interval_iters);
        double v[4] = {fb_ms / n, opt_ms / n, -fb_ms / n, -opt_ms / n};
        if (W_ > 1 && env_.comm) env_.comm->host_reduce_f64(v, 4, /*max=*/true);
        out_last() << format_timers({{"forward-backward", -v[2], v[0]}, {"optimizer", -v[3], v[1]}})
                   << "\n";
        fb_ms = opt_ms = 0;
      }
      log_ << std::flush;
      interval_loss = 0;
      interval_iters = interval_ok = interval_nan = 0;
    }
    if (can_eval && st_.iteration % a_.eval_interval == 0 && st_.iteration < train_iters_) {
      const double vl = evaluate();
      result_.validation_losses.push_back(vl);
      out_last() << format_validation("iteration " + std::to_string(st_.iteration), vl) << "\n";
      recorder_->validation(st_.iteration, st_.consumed_train_samples, vl);
    }
    if (!a_.save.empty() && a_.save_interval > 0 && st_.iteration % a_.save_interval == 0) {
      save();
      saved_now = true;
    }
    // Early exits save first (when --save is given), as Megatron does. The decision is the
    // ranks' together: a signal to one rank or one rank's clock stops all at this iteration.
    std::string why;
    if (a_.exit_interval > 0 && st_.iteration % a_.exit_interval == 0)
      why = "--exit-interval " + std::to_string(a_.exit_interval);
    if (!votes_in_step) {
      votes = stop_votes();
      if (W_ > 1 && st_.iteration < train_iters_) host_sum(votes.data(), votes.size());
    }
    // stop[1]: this rank's signal, or -1 for one that only other ranks saw.
    double stop[2] = {votes[0], votes[1] > 0 ? (own_signal > 0 ? own_signal : -1.0) : 0.0};
    if (stop[0] > 0) why = "--exit-duration-in-mins";
    if (stop[1] > 0) why = "signal " + std::to_string(int(stop[1]));
    if (stop[1] < 0) why = "a signal to another rank";
    if (!why.empty() && st_.iteration < train_iters_) {
      if (!a_.save.empty() && !saved_now) save();
      log_ << " exiting program at iteration " << st_.iteration << " (" << why << ")\n";
      result_.exited_early = true;
      break;
    }
    // At the end of the iteration's work (log, evaluation, checkpoint), as Megatron stops it.
    if (profiling && st_.iteration == a_.profile_step_end) stop_profiler();
    interval_start = interval_iters == 0 ? Clock::now() : interval_start;
  }
  if (profiling) stop_profiler();  // the run ended inside the range
  result_.final_iteration = st_.iteration;
  if (result_.exited_early) return result_;
  if (can_eval) {
    const double vl = evaluate();
    result_.validation_losses.push_back(vl);
    out_last() << format_validation("the end of training for val data", vl) << "\n";
    recorder_->validation(st_.iteration, st_.consumed_train_samples, vl);
  }
  if (!a_.save.empty() && !saved_now) save();
  if (!a_.export_hf.empty()) {
    if (!mp_) {
      std::vector<float> params(layout_->total());
      be_->get_params(params.data());
      if (env_.rank == 0) export_hf(a_.export_hf, cfg_, *layout_, params.data());
    } else {
      // The shards' global tensors come from a checkpoint: the one just saved, else a temporary
      // one next to the export.
      const std::string dir = a_.save.empty() ? a_.export_hf + ".shards.tmp" : a_.save;
      if (a_.save.empty()) save_to(dir);
      std::string error;
      if (env_.rank == 0) try {
          export_hf_from_checkpoint(dir, a_.export_hf);
        } catch (const suite::ToolError& e) {
          error = suite::format_error(e);
        }
      if (env_.rank == 0 && a_.save.empty()) std::filesystem::remove_all(dir);
      if (!all_ok(error.empty()))
        throw suite::ToolError(error.empty() ? "rank 0 could not export the Hugging Face model"
                                             : error);
    }
    out_first() << " exported Hugging Face GPT-2 model to " << a_.export_hf << "\n";
  }
  return result_;
}

}  // namespace

TrainResult run_training(const TrainArgs& args, std::ostream& log, const DistEnv* env) {
  Run run(args, log, env);
  return run.go();
}

}  // namespace gpt
