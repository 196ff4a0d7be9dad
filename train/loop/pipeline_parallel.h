// Tensor and pipeline parallelism for the trainer: this rank's place and groups, and the executor
// that walks the pipeline schedule (train/dist/pipeline_schedule.h) over the backend's stage
// calls, moving activations and their gradients between neighbouring stages and summing the tied
// word embedding's gradient between the first and the last stage.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "train/backend/backend.h"
#include "train/dist/communicator.h"
#include "train/dist/parallel_layout.h"
#include "train/dist/pipeline_schedule.h"
#include "train/loop/stage_report.h"

namespace gpt {

// Where this rank stands when T·P > 1 (DistEnv::model_parallel).
struct ModelParallelEnv {
  dist::ParallelLayout layout;
  dist::RankCoord coord;
  // This rank's groups (ranks numbered within each group; train/dist/process_groups.h).
  dist::Communicator* tensor = nullptr;
  dist::Communicator* data = nullptr;
  dist::Communicator* pipeline = nullptr;
  dist::Communicator* embedding = nullptr;

  bool first_stage() const { return coord.pp == 0; }
  bool last_stage() const { return coord.pp == layout.pipeline - 1; }
  // The stage (layer range and shard) of model chunk `chunk` on this rank.
  StageSpec stage(int chunk = 0) const;
};

// The ranges of [0, layout.total()) whose gradients this rank counts in the global norm, so that
// the world's sum counts each of the model's gradients once: a TP-replicated tensor on TP rank 0
// only, the tied word embedding on the first stage only (the last holds the same sum).
std::vector<std::pair<size_t, size_t>> norm_ranges(const ParamLayout& layout,
                                                   const ModelParallelEnv& mp);

class PipelineParallel {
 public:
  struct Chunk {
    Backend* backend;
    const ParamLayout* layout;  // the one the backend was made with
  };
  // chunks[c]: this rank's model chunk c (one with 1F1B), made with stage(c) and pipeline_slots =
  // slots(). m: micro-batches per step.
  PipelineParallel(std::vector<Chunk> chunks, const ModelParallelEnv& mp, int m);

  // The backends' pipeline_slots: the most micro-batches this rank holds at once.
  static int slots(const dist::ParallelLayout& layout, int pp, int m);

  // One step's forwards and backwards in the schedule's order. inputs[i] / targets[i]: micro-batch
  // i's host token ids [B, T] (read on the first / last stage only); before_forward(i) runs
  // before each forward of micro-batch i (the dropout key). Then the tied embedding's gradient is
  // summed over the embedding group. Returns the mean over the micro-batches of the last stage's
  // losses (0 on the other stages).
  double train_step(const std::vector<const int*>& inputs, const std::vector<const int*>& targets,
                    float loss_weight, const std::function<void(int)>& before_forward);

  // Forward only of one micro-batch through every stage (evaluation): the last stage's loss, 0
  // elsewhere.
  double eval_micro_batch(const int* inputs, const int* targets);

  // Times every forward and backward pass of train_step on `clock` (the per-stage report);
  // nullptr: none.
  void set_pass_clock(PassClock* clock) { clock_ = clock; }

 private:
  void reduce_tied_embedding();
  std::vector<Chunk> chunks_;
  const ModelParallelEnv& mp_;
  int m_ = 1;
  std::vector<dist::PipeAction> actions_;
  PassClock* clock_ = nullptr;
};

}  // namespace gpt
