// Training checkpoints: weights, AdamW state, iteration, consumed samples (the data position: samples
// are addressed by index), the seed (every random stream is keyed by it), and the arguments.
//
// Layout (Megatron-like directory, own file format):
//   DIR/latest_checkpointed_iteration.txt       the iteration number, written last
//   DIR/iter_%07d/shard_<r>_of_<N>.bin          what rank r of N wrote (N = the data-parallel size)
//   DIR/iter_%07d/index.txt                     the shard files and the tensor table, by rank 0
// A shard file: "GPTSHRD1", u64 header bytes, a text header of `key=value` lines (model shape,
// state, arguments, `shard`, `shards`, `num-params` and `ranges`: the [begin, end) ranges of
// the flat parameter buffer this shard holds), then the params, adam m and adam v of those ranges
// (fp32 little endian, in range order), then the XXH64 of everything before it. The flat buffer
// is the ParamLayout (every tensor's name, shape and offset, listed in index.txt), so a
// checkpoint written by N ranks loads at any other number: the shards are reassembled by their
// global offsets. Rank 0 writes index.txt and then latest_checkpointed_iteration.txt only after
// every rank's shard is complete.
// Older checkpoints hold one file, iter_%07d/model_optim_rng.bin ("GPTCKPT1", the whole buffers
// in one piece); they still load. Every file is written to a temporary name, fsynced and
// renamed, so a crash leaves either the old or the new checkpoint, never half of one.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "train/model/config.h"

namespace gpt {

struct TrainState {
  int64_t iteration = 0;
  int64_t consumed_train_samples = 0;
  int64_t consumed_valid_samples = 0;
  int64_t skipped_iterations = 0;
  int64_t nan_iterations = 0;
  int64_t adam_step = 0;  // successful optimizer steps
  uint64_t seed = 0;
  // fp16 loss scaler (train/loop/loss_scaler.h); 0: no scaler (older checkpoints, bf16, fp32)
  double loss_scale = 0;
  int64_t loss_scale_growth_tracker = 0, loss_scale_hysteresis_tracker = 0;
};

struct Checkpoint {
  ModelConfig model;
  TrainState state;
  std::string arguments;
  std::vector<float> params, adam_m, adam_v;
};

// What one rank writes: ranges of the flat buffers (ckpt.params/adam_m/adam_v are read only
// there; they are full-length arrays). The ranges of all ranks must cover the buffer once.
struct ShardSpec {
  int rank = 0, shards = 1;
  std::vector<std::pair<size_t, size_t>> ranges;
  // Tensor table for index.txt: "name shape offset" lines (may be empty).
  std::vector<std::string> tensors;
};
// Agreement between the ranks: returns whether every rank passed true (a barrier).
using AllOk = std::function<bool(bool ok)>;

// Every rank calls it: writes its shard of DIR/iter_<state.iteration>/; once all are written,
// rank 0 writes index.txt and then updates latest_checkpointed_iteration.txt. A rank that fails
// still reaches the barriers, and every rank then throws.
void save_checkpoint(const std::string& dir, const Checkpoint& ckpt, const ShardSpec& spec,
                     const AllOk& all_ok);
// One process: the whole buffers in one shard.
void save_checkpoint(const std::string& dir, const Checkpoint& ckpt);

// Reads the latest checkpoint in dir (throws suite::ToolError when missing or corrupt).
Checkpoint load_checkpoint(const std::string& dir);
// Whether DIR holds latest_checkpointed_iteration.txt (a first run with --load DIR starts from
// scratch, as Megatron's does).
bool has_checkpoint(const std::string& dir);

// Throws suite::ToolError naming every model field that differs ("--hidden-size: checkpoint 64,
// this run 32").
void check_same_model(const ModelConfig& saved, const ModelConfig& run, const std::string& dir);

}  // namespace gpt
