// Every gpt-train setting, with Megatron's flag names and defaults (see options.cpp for the help).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dataset/data_flags.h"
#include "kernels/kernel_config.h"
#include "train/dist/launch_env.h"
#include "train/dist/parallel_layout.h"
#include "train/model/config.h"

namespace gpt {

struct TrainArgs {
  // model
  ModelConfig model;  // vocab sizes filled from --vocab-size / --vocab-file / data
  int make_vocab_size_divisible_by = 128;
  int tensor_parallel = 1;  // = parallel.tensor (--tensor-model-parallel-size)
  // Tensor and pipeline parallelism as given (--pipeline-partition, ...) and as resolved: the
  // stages' layers at parse, the data-parallel size too once the world size is known.
  dist::LayoutFlags parallel;
  dist::ParallelLayout layout;
  float hidden_dropout = 0.0f;
  float attention_dropout = 0.0f;
  // device
  std::string device = "cpu";
  bool bf16 = false, fp16 = false, recompute_activations = false;
  int recompute_gelu_layers = -1;  // --bf16, CUDA: the first N layers recompute the GELU; -1 all
  int classifier_rows = 4096;      // CUDA: output-layer rows per chunk
  KernelConfig kernels;            // CUDA: --cuda-graphs, --gemm-autotune, --sm90-gemm, ...
  // fp16 loss scaling (Megatron): static when loss_scale > 0, else dynamic
  double loss_scale = 0, initial_loss_scale = 4294967296.0, min_loss_scale = 1.0;
  int64_t loss_scale_window = 1000, hysteresis = 2;
  int cpu_threads = 0;  // 0: all cores
  // batch and length
  int micro_batch_size = 1;
  int global_batch_size = 0;  // 0: micro_batch_size · data-parallel size
  int64_t train_iters = 0;
  int64_t train_samples = 0;
  // learning rate schedule and optimizer
  double lr = -1, min_lr = 0.0;
  std::string lr_decay_style = "linear";
  int64_t lr_warmup_iters = 0, lr_warmup_samples = 0;
  double lr_warmup_fraction = -1;
  int64_t lr_decay_iters = 0, lr_decay_samples = 0;
  double weight_decay = 0.01, adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8;
  double clip_grad = 1.0;
  uint64_t seed = 1234;
  // data
  bool mock_data = false;
  int64_t mock_data_samples = 0;  // 0: as many distinct samples as the run reads
  // --data-path or per-split data, their list files, --split-rounding, --mid-level-dataset-surplus
  suite::dataset::DataFlags data;
  std::string split = "969, 30, 1";
  std::string data_cache_path, vocab_file, merge_file;
  std::string cache_naming = "classic";  // index maps saved under classic or md5 names
  int vocab_size = 0;
  // evaluation and logging
  int64_t eval_interval = 1000, eval_iters = 100, log_interval = 100;
  std::string metrics_file;  // world size > 1: rank r writes PATH with .rank<r> before the extension
  // TensorBoard (Megatron's flags): events written by the last rank
  std::string tensorboard_dir;
  int64_t tensorboard_log_interval = 1;
  bool log_timers_to_tensorboard = false, log_memory_to_tensorboard = false;
  // --timing-log-level: Megatron's "(min, max) time across ranks" of forward-backward and the
  // optimizer at each log interval; -1: not printed (timing synchronises the device).
  int timing_log_level = -1;
  // checkpoints
  std::string save, load;
  int64_t save_interval = 0, exit_interval = 0;
  double exit_duration_in_mins = 0;
  // Hugging Face interchange
  std::string export_hf, init_from_hf;
  // --profile: cudaProfilerStart before iteration index profile_step_start (0-based, as Megatron
  // counts) and cudaProfilerStop after iteration index profile_step_end - 1, on the listed ranks,
  // for `nsys profile --capture-range=cudaProfilerApi` or `ncu --profile-from-start off`.
  bool profile = false;
  int64_t profile_step_start = 10, profile_step_end = 12;
  std::vector<int> profile_ranks = {0};
  // --profile-layers OUT.json: measure layer profiles for gpt-plan instead of training
  // (train/loop/profile_layers.h); empty lists: the run's micro-batch / tensor-parallel size.
  std::string profile_layers, profile_gpu_type;
  std::vector<int> profile_micro_batch_sizes, profile_tensor_parallel_sizes;

  // data parallelism (flags of their own group in options.cpp; the launch itself in train/dist/)
  dist::LaunchFlags launch;           // --rank --world-size --local-rank --master-addr --master-port
  int nproc_per_node = 0;             // > 0: this process launches that many local ranks
  double distributed_timeout_minutes = 10;
  std::string distributed_backend = "nccl";  // nccl | gloo, accepted (the device picks NCCL or TCP)
  bool use_distributed_optimizer = false;    // ZeRO-1: AdamW state sharded over the ranks
  bool overlap_grad_reduce = false, overlap_param_gather = false;
  int64_t ddp_bucket_size = 0;        // parameters per gradient bucket; 0: max(40M, 1M x DP)
  bool grad_reduce_in_bf16 = false;
  bool finetune = false, no_load_optim = false, no_load_rng = false;
  bool log_params_hash = false;       // a weights-hash line per rank at each log interval
  // Set by apply_data_parallel once the world size is known (1 until then).
  int data_parallel_size = 1;
  bool global_batch_given = false;

  // The command line as given (stored in checkpoints).
  std::string command_line;
};

// Parses and validates argv. Returns false when --help or --version was printed (exit 0).
// Throws suite::UsageError with one clear message on any mistake.
bool parse_train_args(int argc, char** argv, TrainArgs& out);

// Sets the data-parallel size, the default global batch (micro-batch x DP) and checks that the
// global batch divides into micro-batch x DP, with Megatron's message. Throws suite::UsageError.
void apply_data_parallel(TrainArgs& a, int data_parallel_size);
// Resolves the layout for `world_size` ranks (T x P x D = world size, else a usage error naming
// the flags) and applies its data-parallel size. Throws suite::UsageError.
void apply_world_size(TrainArgs& a, int world_size);
// Megatron's --ddp-bucket-size default: max(40M, 1M x DP) parameters.
int64_t ddp_bucket_size(const TrainArgs& a);

// Derived quantities (after parse).
int64_t total_train_iters(const TrainArgs& a);

}  // namespace gpt
