// gpt-train command line: Megatron flag names and defaults on Boost.Program_options.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "common/cli/error.h"
#include "train/loop/args.h"

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
    "  here (Megatron: 0.1); --attention-dropout must be 0 (not implemented).\n"
    "  Tensor/pipeline parallel sizes other than 1 are not supported yet.\n"
    "  SIGTERM or SIGUSR1 saves a checkpoint (with --save) at the end of the current iteration\n"
    "  and exits 0.\n";

// The CUDA kernel choices (kernels/kernel_config.h) as flags: on|off words, checked after parsing.
struct KernelFlags {
  std::string cuda_graphs = "on", cuda_graph_impl, gemm_autotune = "on", sm90_gemm = "gelu",
              sm90_attention = "on", bf16_weight_grads = "on";
};

po::options_description kernel_options(KernelFlags& f, KernelConfig& k) {
  po::options_description d("CUDA kernel choices (defaults: the fastest with run-to-run "
                            "identical bits)");
  d.add_options()
      ("cuda-graphs", po::value(&f.cuda_graphs)->default_value("on"),
       "on | off: replay each training micro-batch as one CUDA graph (never with dropout)")
      ("cuda-graph-impl", po::value(&f.cuda_graph_impl),
       "Megatron's spelling: local (= --cuda-graphs on) | none (= off)")
      ("gemm-autotune", po::value(&f.gemm_autotune)->default_value("on"),
       "on | off: time the cuBLASLt candidates with the same bits at a GEMM shape's first use "
       "and keep the fastest (off: the heuristic's first)")
      ("gemm-candidates", po::value(&k.gemm_candidates)->default_value(8),
       "cuBLASLt heuristic candidates per GEMM shape (1-64)")
      ("gemm-tune-burst", po::value(&k.gemm_tune_burst)->default_value(50),
       "back-to-back runs per autotuning timing (1-1000)")
      ("gemm-tune-log", po::bool_switch(&k.gemm_tune_log),
       "print each autotuning choice and every candidate's time on stderr")
      ("sm90-gemm", po::value(&f.sm90_gemm)->default_value("gelu"),
       "off | gelu | all: the products that run on the Hopper GEMM (compute capability 9.0): "
       "none, those with a GELU epilogue, or every one it takes")
      ("sm90-attention", po::value(&f.sm90_attention)->default_value("on"),
       "on | off: head size 64 on compute capability 9.0 runs the Hopper flash attention")
      ("bf16-weight-grads", po::value(&f.bf16_weight_grads)->default_value("on"),
       "on | off: --bf16: a step's first micro-batch writes the weight gradients in bf16, as "
       "autocast does (off: fp32)");
  return d;
}

bool on_off(const std::string& flag, const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw suite::UsageError("--" + flag + " must be on or off, not '" + value + "'");
}

void check_kernel_flags(const KernelFlags& f, KernelConfig& k) {
  k.cuda_graphs = on_off("cuda-graphs", f.cuda_graphs);
  if (!f.cuda_graph_impl.empty()) {
    if (f.cuda_graph_impl != "local" && f.cuda_graph_impl != "none")
      throw suite::UsageError("--cuda-graph-impl must be local or none, not '" +
                              f.cuda_graph_impl + "'");
    k.cuda_graphs = f.cuda_graph_impl == "local" && f.cuda_graphs == "on";
  }
  k.gemm_autotune = on_off("gemm-autotune", f.gemm_autotune);
  k.sm90_attention = on_off("sm90-attention", f.sm90_attention);
  k.bf16_weight_grads = on_off("bf16-weight-grads", f.bf16_weight_grads);
  if (f.sm90_gemm == "off")
    k.sm90_gemm = Sm90GemmUse::kNone;
  else if (f.sm90_gemm == "gelu")
    k.sm90_gemm = Sm90GemmUse::kGelu;
  else if (f.sm90_gemm == "all")
    k.sm90_gemm = Sm90GemmUse::kAll;
  else
    throw suite::UsageError("--sm90-gemm must be off, gelu or all, not '" + f.sm90_gemm + "'");
  if (k.gemm_candidates < 1 || k.gemm_candidates > kMaxGemmCandidates)
    throw suite::UsageError("--gemm-candidates must be in 1.." +
                            std::to_string(kMaxGemmCandidates));
  if (k.gemm_tune_burst < 1 || k.gemm_tune_burst > kMaxGemmTuneBurst)
    throw suite::UsageError("--gemm-tune-burst must be in 1.." +
                            std::to_string(kMaxGemmTuneBurst));
}

}  // namespace

int64_t total_train_iters(const TrainArgs& a) {
  if (a.train_iters > 0) return a.train_iters;
  return a.train_samples / a.global_batch_size;
}

bool parse_train_args(int argc, char** argv, TrainArgs& a) {
  for (int i = 0; i < argc; ++i) a.command_line += (i ? " " : "") + std::string(argv[i]);
  ModelConfig& m = a.model;
  std::string tokenizer_type;
  int pipeline_parallel = 1, recompute_num_layers = 0;
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
       "must be 0 (attention dropout is not implemented)")
      ("make-vocab-size-divisible-by",
       po::value(&a.make_vocab_size_divisible_by)->default_value(128), "vocabulary padding")
      ("tensor-model-parallel-size", po::value(&a.tensor_parallel)->default_value(1), "only 1")
      ("pipeline-model-parallel-size", po::value(&pipeline_parallel)->default_value(1), "only 1");

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
      ("data-path", po::value(&a.data_path)->multitoken(), "prefix, or weight prefix pairs")
      ("split", po::value(&a.split)->default_value("969, 30, 1"), "train,valid,test shares")
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
      ("metrics-file", po::value(&a.metrics_file), "append one JSON line per log/eval")
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
       "ranks that profile (this build runs rank 0 only)")
      ("help,h", "show this help")
      ("version", "show the version");

  po::options_description all;
  all.add(model).add(run).add(train).add(data).add(logs);
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
      std::cout << kUsage << "\n" << all << "\n" << kExample << "\n" << kNotes;
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
  usage(a.attention_dropout == 0.0f, "--attention-dropout: only 0 is supported (attention "
        "dropout is not implemented)");
  usage(a.tensor_parallel == 1, "--tensor-model-parallel-size: only 1 is supported so far");
  usage(pipeline_parallel == 1, "--pipeline-model-parallel-size: only 1 is supported so far");
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
  if (a.global_batch_size == 0) a.global_batch_size = a.micro_batch_size;
  const int data_parallel = 1;
  usage(a.global_batch_size % (a.micro_batch_size * data_parallel) == 0,
        "--global-batch-size (" + std::to_string(a.global_batch_size) +
            ") must be divisible by --micro-batch-size x data-parallel size (" +
            std::to_string(a.micro_batch_size) + " x " + std::to_string(data_parallel) + ")");
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
  usage(a.eval_iters >= 0, "--eval-iters must be >= 0");
  usage(a.eval_interval > 0, "--eval-interval must be positive");
  usage(a.mock_data != !a.data_path.empty(), "give exactly one of --mock-data and --data-path");
  usage(a.cache_naming == "classic" || a.cache_naming == "md5",
        "--cache-naming must be classic or md5, got '" + a.cache_naming + "'");
  usage(a.save_interval == 0 || !a.save.empty(), "--save-interval needs --save DIR");
  usage(!a.profile || (a.profile_step_start >= 0 && a.profile_step_end > a.profile_step_start),
        "--profile-step-end must be greater than --profile-step-start (>= 0)");
  usage(a.device == "cpu" || a.device == "cuda", "--device must be cpu or cuda");
  return true;
}

}  // namespace gpt
