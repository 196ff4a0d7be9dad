// Training checkpoints: weights, AdamW state, iteration, consumed samples (the data position: samples
// are addressed by index), the seed (every random stream is keyed by it), and the arguments.
//
// Layout (Megatron-like directory, own file format):
//   DIR/latest_checkpointed_iteration.txt       the iteration number, written last
//   DIR/iter_%07d/shard_<r>_of_<N>.bin          what rank r of N wrote (N = the world size)
//   DIR/iter_%07d/index.txt                     the shard files and the tensor table, by rank 0
// A shard file: "GPTSHRD1", u64 header bytes, a text header of `key=value` lines (model shape,
// state, arguments, `shard`, `shards`, `num-params` and `ranges`: the [begin, end) ranges of
// the flat parameter buffer this shard holds), then the params, adam m and adam v of those ranges
// (fp32 little endian, in range order), then the XXH64 of everything before it. The flat buffer
// is the whole model's ParamLayout (every tensor's global name, shape and offset, listed in
// index.txt), whatever the saving run's layout, so a checkpoint written by N ranks loads at any
// other number and layout: the pieces are found by their global offsets. Rank 0 writes index.txt and then latest_checkpointed_iteration.txt only after
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
#include "train/model/layout.h"

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

// Reads the latest checkpoint in dir (throws suite::ToolError when missing or corrupt): the
// global tensors as stored (ParamLayout(ckpt.model), its padded vocabulary).
Checkpoint load_checkpoint(const std::string& dir);

// ---- Any layout (tensor, pipeline and data parallelism; checkpoint_layout.cpp).
// On disk a checkpoint always holds the global tensors of the saving run: the flat buffer of
// ParamLayout(model) with that run's padded vocabulary (model.padded_vocab_size, a multiple of
// 128·T), every rank writing its pieces at their global offsets. Loading slices them for any
// other layout; the vocabulary rows are padded with zeros or trimmed (only padding rows: both
// sizes are at least the real vocabulary), so a checkpoint saved at any (T, P, D) loads at any
// other, and --export-hf and the Megatron converter read it as a one-process checkpoint.

// What one rank of a (T, P, D) run writes.
struct SavePart {
  int rank = 0, world = 1;  // global rank and world size (shard_<rank>_of_<world>.bin)
  // Ranges of this rank's flat buffer (its layout) whose parameters and AdamW moments it writes:
  // its data-parallel share, the same split on every rank of its DP group (the distributed
  // optimizer's owned ranges; with plain DP the same split shares the writing). Empty: all.
  std::vector<std::pair<size_t, size_t>> owned;
};

// Every rank calls it (a collective: all_ok agrees over the whole world). ckpt.model is the
// run's whole-model config (its padded vocabulary), ckpt.params/adam_m/adam_v this rank's
// buffers in `layout` = ParamLayout(ckpt.model, stage), the moments valid at least on
// part.owned. Each global element is written once: tensors replicated over the TP group by TP
// rank 0, the tied word embedding by the first pipeline stage (not the last's copy), each DP
// group's copy split by part.owned.
void save_checkpoint(const std::string& dir, const Checkpoint& ckpt, const ParamLayout& layout,
                     const SavePart& part, const AllOk& all_ok);

// The same for a rank holding several model chunks (the interleaved schedule's virtual stages):
// each chunk's layout, buffers and owned ranges; ckpt gives the model, state and arguments only.
struct SaveChunk {
  const ParamLayout* layout = nullptr;
  const float *params = nullptr, *adam_m = nullptr, *adam_v = nullptr;  // layout->total() each
  std::vector<std::pair<size_t, size_t>> owned;  // as SavePart::owned
};
void save_checkpoint(const std::string& dir, const Checkpoint& ckpt,
                     const std::vector<SaveChunk>& chunks, int rank, int world,
                     const AllOk& all_ok);

// This rank's tensors of the latest checkpoint in dir, in `layout` = ParamLayout(run, stage):
// params, adam_m and adam_v of layout.total() floats each (all of the moments, whatever part
// of them the rank uses). model, state and arguments are the checkpoint's. Each rank reads only
// the pieces it needs. Throws suite::ToolError when missing or corrupt, or when the model
// shapes differ (check_same_model, the vocabulary padding aside).
Checkpoint load_checkpoint(const std::string& dir, const ModelConfig& run,
                           const ParamLayout& layout);
// Whether DIR holds latest_checkpointed_iteration.txt (a first run with --load DIR starts from
// scratch, as Megatron's does).
bool has_checkpoint(const std::string& dir);

// Throws suite::ToolError naming every model field that differs ("--hidden-size: checkpoint 64,
// this run 32"); with same_padding false, the padded vocabulary may differ.
void check_same_model(const ModelConfig& saved, const ModelConfig& run, const std::string& dir,
                      bool same_padding = true);

}  // namespace gpt
