// Training checkpoints: weights, AdamW state, iteration, consumed samples (the data position: samples
// are addressed by index), the seed (every random stream is keyed by it), and the arguments.
//
// Layout (Megatron-like directory, own file format):
//   DIR/latest_checkpointed_iteration.txt       the iteration number, written last
//   DIR/iter_%07d/model_optim_rng.bin           the checkpoint
// model_optim_rng.bin: "GPTCKPT1", u64 header bytes, a text header of `key=value` lines (model
// shape, state, arguments), then params, adam m, adam v (fp32 little endian, layout order), then
// the XXH64 of everything before it. Every file is written to a temporary name, fsynced and
// renamed, so a crash leaves either the old or the new checkpoint, never half of one.
#pragma once

#include <cstdint>
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

// Writes DIR/iter_<state.iteration>/ and then updates latest_checkpointed_iteration.txt.
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
