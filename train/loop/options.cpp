// gpt-train command line: Megatron flag names and defaults on Boost.Program_options.
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "common/cli/error.h"
#include "kernels/dropout_mask.h"
#include "train/loop/args.h"
#include "train/loop/kernel_flags.h"
#include "train/loop/profile_layers.h"

#ifndef SUITE_VERSION
#define SUITE_VERSION "0.0.0"
#endif

namespace gpt {
namespace po = boost::program_options;
namespace {

const char* kUsage =
    "Usage: gpt-train [options]\n"
    "Trains a GPT-2 / Megatron GPT model (learned positions, pre-LayerNorm, GELU, tied embeddings)\n"
    "with Megatron-LM's pretrain_gpt.py flags and log lines.\n";

const char* kExample =
    "Example (a tiny model on mock data, on the CPU, then exported for Hugging Face):\n"
    "  gpt-train --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 \\\n"
    "      --max-position-embeddings 64 --micro-batch-size 4 --global-batch-size 8 \\\n"
    "      --train-iters 100 --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine \\\n"
    "      --lr-warmup-iters 10 --mock-data --vocab-size 512 --log-interval 10 \\\n"
    "      --eval-interval 50 --eval-iters 2 --save ckpt --save-interval 50 --export-hf hf-out\n"
    "Real data (Megatron .bin/.idx from preprocess_data.py):\n"
    "  gpt-train ... --data-path corpus_text_document --split 969,30,1 \\\n"
    "      --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt --data-cache-path cache\n";

const char* kNotes =
    "Notes:\n"
    "  --bf16/--fp16 select the CUDA backend's mixed precision; the cpu backend computes in fp32\n"
    "  and says so (with --fp16 its loss scaling still runs). --recompute-activations is honoured\n"
    "  by the CUDA backend; the cpu backend keeps all activations. --hidden-dropout defaults to 0\n"
    "  here (Megatron: 0.1), and so does --attention-dropout (Megatron: 0.1; dropout on the\n"
    "  softmax probabilities, the same mask on both backends and on resume).\n"
    "  Tensor x pipeline x data parallel sizes must multiply to the world size; ranks are ordered\n"
    "  as Megatron orders them (tensor fastest, then data, then pipeline). The stages' layers:\n"
    "  even by default, or one of --pipeline-partition 0-11-8-8-8-8-5-0 (0: a stage with only\n"
    "  the embedding, first, or only the output layer and loss, last), --balance (FASOP; also in\n"
    "  L+2 units: 1-11-8-8-8-8-5-1), --pipeline-model-parallel-layout \"E|t*11|(t*8|)*4,t*5|L\"\n"
    "  (Megatron), --decoder-first/last-pipeline-num-layers (the other stages even).\n"
    "  SIGTERM or SIGUSR1 saves a checkpoint (with --save) at the end of the current iteration\n"
    "  and exits 0.\n";

void add_data_parallel_options(po::options_description& dp, TrainArgs& a) {
  dist::LaunchFlags& l = a.launch;
  dp.add_options()
      ("rank", po::value(&l.rank)->default_value(-1, "from the launcher"),
       "this process's rank (else torchrun's RANK, or SLURM_PROCID inside an srun step)")
      ("world-size", po::value(&l.world_size)->default_value(-1, "from the launcher"),
       "number of processes (else WORLD_SIZE / SLURM_STEP_NUM_TASKS; default 1)")
      ("local-rank", po::value(&l.local_rank)->default_value(-1, "from the launcher"),
       "rank on this host: the GPU used when several are visible (else LOCAL_RANK / SLURM_LOCALID)")
      ("master-addr", po::value(&l.master_addr), "rendezvous host (else MASTER_ADDR, or the first "
       "host of SLURM_STEP_NODELIST)")
      ("master-port", po::value(&l.master_port)->default_value(0, "from the launcher"),
       "rendezvous port (else MASTER_PORT, or 61000 + SLURM_JOB_ID % 4536)")
      ("nproc-per-node", po::value(&a.nproc_per_node)->default_value(0),
       "launch this many ranks on this host (each gets RANK, LOCAL_RANK, ...) and wait for them")
      ("distributed-timeout-minutes",
       po::value(&a.distributed_timeout_minutes)->default_value(10.0, "10"),
       "a rank that does not arrive or reach a collective within this ends the job, named")
      ("distributed-backend", po::value(&a.distributed_backend)->default_value("nccl"),
       "nccl | gloo: accepted for Megatron scripts; --device cuda uses NCCL, cpu uses TCP sockets")
      ("use-distributed-optimizer", po::bool_switch(&a.use_distributed_optimizer),
       "shard the AdamW moments and, with --bf16, the fp32 master weights over the data-parallel "
       "ranks (ZeRO-1): reduce-scatter, sharded update, all-gather of the weights")
      ("overlap-grad-reduce", po::bool_switch(&a.overlap_grad_reduce),
       "reduce each gradient bucket while the backward pass runs (a second CUDA stream)")
      ("overlap-param-gather", po::bool_switch(&a.overlap_param_gather),
       "all-gather the updated weights bucket by bucket under the next forward (needs "
       "--use-distributed-optimizer and --overlap-grad-reduce)")
      ("ddp-bucket-size", po::value(&a.ddp_bucket_size)->default_value(0, "max(40M, 1M x DP)"),
       "parameters per gradient-reduction bucket, at least (buckets start at layer boundaries; "
       "the first layer and the embeddings are buckets of their own)")
      ("grad-reduce-in-bf16", po::bool_switch(&a.grad_reduce_in_bf16),
       "reduce gradients in bf16 (half the bytes; default fp32, as Megatron with --bf16)")
      ("finetune", po::bool_switch(&a.finetune),
       "--load the weights only: iteration, samples, optimizer and random state start afresh")
      ("no-load-optim", po::bool_switch(&a.no_load_optim),
       "--load without the optimizer state: AdamW's moments and step count (bias correction, "
       "learning-rate schedule) start afresh, as Megatron's scheduler travels with it")
      ("no-load-rng", po::bool_switch(&a.no_load_rng),
       "--load without the random state: dropout follows this run's --seed")
      ("log-params-hash", po::bool_switch(&a.log_params_hash),
       "print 'params hash: rank R iteration I XXH64' on every rank at each log interval (the "
       "weights of all ranks must agree)");
}

void add_model_parallel_options(po::options_description& mp, TrainArgs& a) {
  dist::LayoutFlags& f = a.parallel;
  mp.add_options()
      ("tensor-model-parallel-size", po::value(&f.tensor)->default_value(1),
       "tensor-parallel ranks (Megatron's split of attention and MLP; must divide the heads)")
      ("sequence-parallel", po::bool_switch(&f.sequence_parallel),
       "LayerNorms, dropout and residuals on sequence shards of the tensor-parallel ranks "
       "(all-gather / reduce-scatter around their region; off at size 1)")
      ("pipeline-model-parallel-size", po::value(&f.pipeline)->default_value(1),
       "pipeline stages (1F1B schedule)")
      ("num-layers-per-virtual-pipeline-stage",
       po::value(&f.layers_per_virtual_stage)->default_value(0, "none"),
       "interleaved schedule: each stage holds model chunks of this many layers, round robin "
       "(even stages, pipeline size > 2, micro-batches a multiple of the pipeline size)")
      ("decoder-first-pipeline-num-layers",
       po::value(&f.first_stage_layers)->default_value(-1, "even"),
       "layers of the first stage (the others split the rest evenly)")
      ("decoder-last-pipeline-num-layers",
       po::value(&f.last_stage_layers)->default_value(-1, "even"),
       "layers of the last stage (the others split the rest evenly)")
      ("pipeline-partition", po::value(&f.partition),
       "transformer layers of each stage, e.g. 0-11-8-8-8-8-5-0 (zeros only at the two ends)")
      ("balance", po::value(&f.balance), "FASOP's spelling of --pipeline-partition (also in L+2 "
       "units, the embedding and the head counted as one each)")
      ("pipeline-model-parallel-layout", po::value(&f.layout),
       "Megatron's layout string: E embedding, t layer, L loss, x*n repeats, '|' between stages, "
       "e.g. \"E|t*11|(t*8|)*4,t*5|L\"");
}

void check_data_parallel_options(const TrainArgs& a) {
  auto usage = [](bool ok, const std::string& msg) {
    if (!ok) throw suite::UsageError(msg);
  };
  usage(a.distributed_backend == "nccl" || a.distributed_backend == "gloo",
        "--distributed-backend must be nccl or gloo");
  usage(a.distributed_timeout_minutes > 0, "--distributed-timeout-minutes must be positive");
  usage(a.nproc_per_node >= 0, "--nproc-per-node must be positive");
  usage(a.ddp_bucket_size >= 0, "--ddp-bucket-size must be positive");
  // Megatron's own checks for the overlap flags.
  usage(!a.overlap_param_gather || a.use_distributed_optimizer,
        "--overlap-param-gather only supported with distributed optimizer");
  usage(!a.overlap_param_gather || a.overlap_grad_reduce,
        "Must use --overlap-param-gather with --overlap-grad-reduce");
}

}  // namespace

void apply_data_parallel(TrainArgs& a, int data_parallel_size) {
  a.data_parallel_size = data_parallel_size;
  if (!a.global_batch_given) a.global_batch_size = a.micro_batch_size * data_parallel_size;
  // Megatron's ConstantNumMicroBatchesCalculator check, word for word.
  if (a.global_batch_size % (a.micro_batch_size * data_parallel_size) != 0)
    throw suite::UsageError("global batch size (" + std::to_string(a.global_batch_size) +
                            ") is not divisible by micro batch size (" +
                            std::to_string(a.micro_batch_size) + ") times data parallel size (" +
                            std::to_string(data_parallel_size) + ")");
}

void apply_world_size(TrainArgs& a, int world_size) {
  const ModelConfig& m = a.model;
  a.layout = dist::resolve_layout(a.parallel, m.num_layers, m.num_heads, m.ffn_hidden_size,
                                  m.seq_length, world_size);
  apply_data_parallel(a, a.layout.data);
  // Megatron's interleaved schedule takes the micro-batches in groups of P.
  const int micro_batches = a.global_batch_size / (a.micro_batch_size * a.layout.data);
  if (a.layout.virtual_stages > 1 && micro_batches % a.layout.pipeline != 0)
    throw suite::UsageError("number of microbatches (" + std::to_string(micro_batches) +
                            ") is not divisible by pipeline-model-parallel-size (" +
                            std::to_string(a.layout.pipeline) +
                            ") when using interleaved schedule");
}

int64_t ddp_bucket_size(const TrainArgs& a) {
  if (a.ddp_bucket_size > 0) return a.ddp_bucket_size;
  return std::max<int64_t>(40000000, 1000000 * int64_t(a.data_parallel_size));
}

int64_t total_train_iters(const TrainArgs& a) {
  if (a.train_iters > 0) return a.train_iters;
  return a.train_samples / a.global_batch_size;
}

bool parse_train_args(int argc, char** argv, TrainArgs& a) {
  for (int i = 0; i < argc; ++i) a.command_line += (i ? " " : "") + std::string(argv[i]);
  ModelConfig& m = a.model;
  std::string tokenizer_type;
  int recompute_num_layers = 0;
  std::string recompute_granularity, recompute_method;

  po::options_description model("Model");
  model.add_options()
      ("num-layers", po::value(&m.num_layers)->required(), "transformer layers")
      ("hidden-size", po::value(&m.hidden_size)->required(), "hidden size")
      ("num-attention-heads", po::value(&m.num_heads)->required(), "attention heads")
      ("ffn-hidden-size", po::value(&m.ffn_hidden_size)->default_value(0),
       "MLP hidden size (default 4 x hidden size)")
      ("seq-length", po::value(&m.seq_length)->required(), "tokens per sample")
      ("max-position-embeddings", po::value(&m.max_position_embeddings)->default_value(0),
       "position table size (default --seq-length)")
      ("init-method-std", po::value(&m.init_method_std)->default_value(0.02f, "0.02"),
       "std of the normal init (output layers scaled by 1/sqrt(2 num-layers))")
      ("hidden-dropout", po::value(&a.hidden_dropout)->default_value(0.0f, "0"),
       "dropout on the embeddings and on each attention and MLP output (Megatron's default is 0.1)")
      ("attention-dropout", po::value(&a.attention_dropout)->default_value(0.0f, "0"),
       "dropout probability of the attention softmax probabilities (Megatron: 0.1)")
      ("make-vocab-size-divisible-by",
       po::value(&a.make_vocab_size_divisible_by)->default_value(128), "vocabulary padding");

  po::options_description run("Device and precision");
  run.add_options()
      ("device", po::value(&a.device)->default_value("cpu"), "cpu | cuda")
      ("cpu-threads", po::value(&a.cpu_threads)->default_value(0), "cpu backend threads (0: all)")
      ("bf16", po::bool_switch(&a.bf16), "bf16 mixed precision (CUDA backend)")
      ("fp16", po::bool_switch(&a.fp16),
       "fp16 mixed precision (CUDA backend) with loss scaling; overflowing iterations are skipped")
      ("loss-scale", po::value(&a.loss_scale)->default_value(0.0, "none"),
       "--fp16: a static loss scale (default: dynamic)")
      ("initial-loss-scale", po::value(&a.initial_loss_scale)->default_value(4294967296.0, "2^32"),
       "--fp16: first dynamic loss scale")
      ("min-loss-scale", po::value(&a.min_loss_scale)->default_value(1.0, "1"),
       "--fp16: lower bound of the dynamic loss scale")
      ("loss-scale-window", po::value(&a.loss_scale_window)->default_value(1000),
       "--fp16: clean iterations before the scale doubles")
      ("hysteresis", po::value(&a.hysteresis)->default_value(2),
       "--fp16: overflows tolerated before the scale halves")
      ("recompute-activations", po::bool_switch(&a.recompute_activations),
       "recompute activations in backward (CUDA backend)")
      ("recompute-granularity", po::value(&recompute_granularity), "full | selective (implies "
       "--recompute-activations)")
      ("recompute-gelu-layers", po::value(&a.recompute_gelu_layers)->default_value(-1),
       "--bf16 (CUDA): the first N layers share one buffer for their GELU output and recompute "
       "it in backward (but the last of them, whose output is still there), the others keep "
       "their own (faster; micro-batch x seq x ffn x 2 bytes per kept layer); -1: every layer")
      ("classifier-rows", po::value(&a.classifier_rows)->default_value(4096),
       "CUDA: rows of the output layer (logits, softmax, their gradient) per chunk; a chunk's "
       "logits take rows x padded vocab x 2 bytes with --bf16, and fewer chunks re-read the fp32 "
       "wte gradient fewer times")
      ("recompute-method", po::value(&recompute_method), "accepted for compatibility")
      ("recompute-num-layers", po::value(&recompute_num_layers), "accepted for compatibility");
  KernelFlags kernel_flags;
  run.add(kernel_options(kernel_flags, a.kernels));

  po::options_description train("Training");
  train.add_options()
      ("micro-batch-size", po::value(&a.micro_batch_size)->default_value(1), "samples per step")
      ("global-batch-size", po::value(&a.global_batch_size)->default_value(0),
       "samples per iteration (gradient accumulation; default --micro-batch-size)")
      ("train-iters", po::value(&a.train_iters), "iterations to train")
      ("train-samples", po::value(&a.train_samples), "samples to train (instead of --train-iters)")
      ("lr", po::value(&a.lr), "peak learning rate (required)")
      ("min-lr", po::value(&a.min_lr)->default_value(0.0, "0"), "final learning rate")
      ("lr-decay-style", po::value(&a.lr_decay_style)->default_value("linear"),
       "constant | linear | cosine")
      ("lr-warmup-iters", po::value(&a.lr_warmup_iters)->default_value(0), "warmup iterations")
      ("lr-warmup-samples", po::value(&a.lr_warmup_samples)->default_value(0), "warmup samples")
      ("lr-warmup-fraction", po::value(&a.lr_warmup_fraction), "warmup as a fraction of decay")
      ("lr-decay-iters", po::value(&a.lr_decay_iters), "decay iterations (default --train-iters)")
      ("lr-decay-samples", po::value(&a.lr_decay_samples), "decay samples (with --train-samples)")
      ("weight-decay", po::value(&a.weight_decay)->default_value(0.01, "0.01"),
       "AdamW weight decay (not on biases and LayerNorms)")
      ("adam-beta1", po::value(&a.adam_beta1)->default_value(0.9, "0.9"), "")
      ("adam-beta2", po::value(&a.adam_beta2)->default_value(0.999, "0.999"), "")
      ("adam-eps", po::value(&a.adam_eps)->default_value(1e-8, "1e-08"), "")
      ("clip-grad", po::value(&a.clip_grad)->default_value(1.0, "1.0"),
       "clip the global gradient norm (0: off)")
      ("seed", po::value(&a.seed)->default_value(1234), "random seed");

  po::options_description data("Data");
  data.add_options()
      ("mock-data", po::bool_switch(&a.mock_data), "seeded random tokens (needs --vocab-size)")
      ("mock-data-samples", po::value(&a.mock_data_samples)->default_value(0),
       "distinct mock samples, cycled (0: never repeat)")
      ("data-path", po::value(&a.data.data_path)->multitoken(), "prefix, or weight prefix pairs")
      ("train-data-path", po::value(&a.data.split_data_path[0])->multitoken(),
       "instead of --data-path and --split: the training data's own prefix or blend, read whole")
      ("valid-data-path", po::value(&a.data.split_data_path[1])->multitoken(),
       "the validation data's own prefix or blend (with --train-data-path; none: no validation)")
      ("test-data-path", po::value(&a.data.split_data_path[2])->multitoken(),
       "accepted as Megatron takes it (checked, not read: gpt-train has no test pass)")
      ("data-args-path", po::value(&a.data.data_args_path), "a file holding the words of --data-path")
      ("per-split-data-args-path", po::value(&a.data.per_split_data_args_path),
       "a JSON file {\"train\": ..., \"valid\": ..., \"test\": ...} holding the per-split data paths")
      ("split", po::value(&a.split)->default_value("969, 30, 1"), "train,valid,test shares")
      ("split-rounding", po::value(&a.data.split_rounding)->default_value("legacy"),
       "how the shares become sequence ranges: legacy (megatron/data) or core (megatron/core, "
       "today's pretrain_gpt.py); they can differ by a sequence at a boundary, and the rule also "
       "picks a blend's per-component sample counts")
      ("mid-level-dataset-surplus", po::value(&a.data.mid_level_surplus)->default_value(0.005),
       "core blends: each component builds ceil(its share x (1 + this)) samples, as Megatron-core")
      ("data-cache-path", po::value(&a.data_cache_path), "where index maps are cached")
      ("cache-naming", po::value(&a.cache_naming)->default_value("classic"),
       "index maps built here are saved under classic or md5 (Megatron 2023) names")
      ("vocab-file", po::value(&a.vocab_file), "GPT-2 vocab.json")
      ("merge-file", po::value(&a.merge_file), "GPT-2 merges.txt")
      ("tokenizer-type", po::value(&tokenizer_type), "GPT2BPETokenizer (only)")
      ("vocab-size", po::value(&a.vocab_size)->default_value(0), "vocabulary size without a "
       "vocab file");

  po::options_description logs("Evaluation, logging, checkpoints");
  logs.add_options()
      ("eval-interval", po::value(&a.eval_interval)->default_value(1000), "")
      ("eval-iters", po::value(&a.eval_iters)->default_value(100), "0: no evaluation")
      ("log-interval", po::value(&a.log_interval)->default_value(100), "")
      ("metrics-file", po::value(&a.metrics_file), "append a config record, then one JSON line "
       "per log interval and evaluation (with several ranks: PATH.rank<r> per rank, PATH on the "
       "last)")
      ("tensorboard-dir", po::value(&a.tensorboard_dir), "write TensorBoard event files here "
       "(Megatron's scalar tags, from the last rank)")
      ("tensorboard-log-interval", po::value(&a.tensorboard_log_interval)->default_value(1),
       "iterations between TensorBoard scalars")
      ("log-timers-to-tensorboard", po::bool_switch(&a.log_timers_to_tensorboard),
       "also write iteration-time (seconds) to TensorBoard")
      ("timing-log-level", po::value(&a.timing_log_level)->value_name("0|1|2"),
       "at each log interval print Megatron's '(min, max) time across ranks (ms)' of "
       "forward-backward (every micro-batch's passes) and optimizer (gradient reduction left "
       "after the backward, norm, clipping, AdamW); each timer waits for the device at its end, "
       "as Megatron's do; levels 1 and 2 print the same two. Not given: no timers")
      ("log-memory-to-tensorboard", po::bool_switch(&a.log_memory_to_tensorboard),
       "also write mem-reserved-bytes, mem-allocated-bytes, mem-max-allocated-bytes")
      ("save", po::value(&a.save), "checkpoint directory")
      ("save-interval", po::value(&a.save_interval)->default_value(0), "iterations between saves")
      ("load", po::value(&a.load), "resume from this checkpoint directory")
      ("exit-interval", po::value(&a.exit_interval)->default_value(0),
       "exit (after saving) when the iteration is a multiple of this")
      ("exit-duration-in-mins", po::value(&a.exit_duration_in_mins)->default_value(0.0, "0"),
       "exit (after saving) after this many minutes")
      ("exit-signal-handler", "accepted; SIGTERM/SIGUSR1 are always handled")
      ("export-hf", po::value(&a.export_hf), "write config.json + model.safetensors at the end")
      ("init-from-hf", po::value(&a.init_from_hf), "start from a Hugging Face GPT-2 directory")
      ("profile", po::bool_switch(&a.profile), "cudaProfilerStart/Stop around the steps below "
       "(for nsys --capture-range=cudaProfilerApi or ncu --profile-from-start off)")
      ("profile-step-start", po::value(&a.profile_step_start)->default_value(10),
       "first profiled iteration, counted from 0 as Megatron does")
      ("profile-step-end", po::value(&a.profile_step_end)->default_value(12),
       "profiling stops when this many iterations are done")
      ("profile-ranks", po::value(&a.profile_ranks)->multitoken()->default_value({0}, "0"),
       "ranks that profile")
      ("help,h", "show this help")
      ("version", "show the version");

  po::options_description dp("Data parallelism (one process per GPU; see README \"Many GPUs and "
                             "nodes\")");
  add_data_parallel_options(dp, a);

  po::options_description mp("Tensor and pipeline parallelism (see README \"Tensor and pipeline "
                             "parallelism\")");
  add_model_parallel_options(mp, a);

  po::options_description prof("Layer profiles for gpt-plan (see README \"gpt-plan\")");
  add_profile_layers_options(prof, a);

  po::options_description all;
  all.add(model).add(run).add(train).add(data).add(logs);
  all.add(dp).add(mp).add(prof);
  po::variables_map vm;
  try {
    po::parsed_options parsed = po::command_line_parser(argc, argv).options(all).run();
    // A repeated flag keeps its last value, as argparse does in Megatron (launch scripts append
    // overrides).
    std::vector<po::option> kept;
    for (auto it = parsed.options.rbegin(); it != parsed.options.rend(); ++it) {
      bool seen = false;
      for (const auto& k : kept) seen = seen || k.string_key == it->string_key;
      if (!seen) kept.insert(kept.begin(), *it);
    }
    parsed.options = kept;
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::cout << kUsage << "\n" << all << "\n" << kExample << "\n" << profile_layers_example() << "\n" << kNotes;
      return false;
    }
    if (vm.count("version")) {
      std::cout << "gpt-train " << SUITE_VERSION << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw suite::UsageError(e.what());
  }

  auto usage = [](bool ok, const std::string& msg) {
    if (!ok) throw suite::UsageError(msg);
  };
  if (m.ffn_hidden_size == 0) m.ffn_hidden_size = 4 * m.hidden_size;
  if (m.max_position_embeddings == 0) m.max_position_embeddings = m.seq_length;
  usage(a.hidden_dropout >= 0.0f && a.hidden_dropout < 1.0f, "--hidden-dropout must be in [0, 1)");
  usage(a.attention_dropout >= 0.0f && a.attention_dropout < 1.0f,
        "--attention-dropout must be in [0, 1)");
  usage(a.attention_dropout == 0.0f || int64_t(m.seq_length) <= kAttentionMaxT,
        "--attention-dropout takes --seq-length up to " + std::to_string(kAttentionMaxT) +
            " (its mask numbers a position in 16 bits)");
  a.layout = dist::resolve_layout(a.parallel, m.num_layers, m.num_heads, m.ffn_hidden_size,
                                  m.seq_length, 0);
  a.tensor_parallel = a.parallel.tensor;
  usage(!(a.bf16 && a.fp16), "--bf16 and --fp16 are mutually exclusive");
  usage(a.loss_scale >= 0 && a.initial_loss_scale > 0 && a.min_loss_scale > 0 &&
            a.loss_scale_window > 0 && a.hysteresis > 0,
        "--loss-scale, --initial-loss-scale, --min-loss-scale, --loss-scale-window and "
        "--hysteresis must be positive");
  usage(a.recompute_gelu_layers >= -1, "--recompute-gelu-layers must be -1 (all) or >= 0");
  usage(a.classifier_rows >= 1, "--classifier-rows must be >= 1");
  check_kernel_flags(kernel_flags, a.kernels);
  if (!recompute_granularity.empty()) {
    usage(recompute_granularity == "full" || recompute_granularity == "selective",
          "--recompute-granularity must be full or selective");
    a.recompute_activations = true;
  }
  usage(tokenizer_type.empty() || tokenizer_type == "GPT2BPETokenizer",
        "--tokenizer-type: only GPT2BPETokenizer is supported");
  usage(a.micro_batch_size > 0, "--micro-batch-size must be positive");
  a.global_batch_given = a.global_batch_size != 0;
  apply_data_parallel(a, 1);
  check_data_parallel_options(a);
  usage((a.train_iters > 0) != (a.train_samples > 0),
        "give exactly one of --train-iters and --train-samples (positive)");
  usage(total_train_iters(a) > 0, "--train-samples is smaller than one global batch");
  usage(a.lr >= 0, "--lr is required (the peak learning rate)");
  usage(a.min_lr <= a.lr, "--min-lr must not exceed --lr");
  usage(a.lr_decay_style == "constant" || a.lr_decay_style == "linear" ||
            a.lr_decay_style == "cosine",
        "--lr-decay-style must be constant, linear or cosine, not '" + a.lr_decay_style + "'");
  usage(!(vm.count("lr-warmup-fraction") && (a.lr_warmup_iters > 0 || a.lr_warmup_samples > 0)),
        "--lr-warmup-fraction and --lr-warmup-iters/--lr-warmup-samples are mutually exclusive");
  usage(a.log_interval > 0, "--log-interval must be positive");
  usage(a.tensorboard_log_interval > 0, "--tensorboard-log-interval must be positive");
  usage(a.timing_log_level >= -1 && a.timing_log_level <= 2,
        "--timing-log-level must be 0, 1 or 2");
  usage(a.eval_iters >= 0, "--eval-iters must be >= 0");
  usage(a.eval_interval > 0, "--eval-interval must be positive");
  a.data.mid_level_surplus_given = !vm["mid-level-dataset-surplus"].defaulted();
  suite::dataset::check_data_flags(a.data);
  usage(a.mock_data != suite::dataset::has_data(a.data),
        "give exactly one of --mock-data and --data-path (or --train-data-path)");
  usage(a.cache_naming == "classic" || a.cache_naming == "md5",
        "--cache-naming must be classic or md5, got '" + a.cache_naming + "'");
  usage(a.save_interval == 0 || !a.save.empty(), "--save-interval needs --save DIR");
  usage(!a.profile || (a.profile_step_start >= 0 && a.profile_step_end > a.profile_step_start),
        "--profile-step-end must be greater than --profile-step-start (>= 0)");
  usage(a.device == "cpu" || a.device == "cuda", "--device must be cpu or cuda");
  return true;
}

}  // namespace gpt
