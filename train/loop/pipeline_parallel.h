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
  // NCCL: the stream of the data-parallel group and of the world communicator only, where
  // DataParallel queues its reductions (a second stream with --overlap-grad-reduce); the tensor
  // and pipeline groups stay on the backend's stream, ordered with the passes that use them.
  std::function<void(void* stream)> set_reduction_stream;

  bool first_stage() const { return coord.pp == 0; }
  bool last_stage() const { return coord.pp == layout.pipeline - 1; }
  // The stage (layer range and shard) of model chunk `chunk` on this rank.
  StageSpec stage(int chunk = 0) const;
};

// The ranges of [0, layout.total()) whose gradients this rank counts in the global norm
// (ParamLayout::counts_in_norm, merged where adjacent), so that the world's sum counts each of the
// model's gradients once.
std::vector<std::pair<size_t, size_t>> norm_ranges(const ParamLayout& layout);

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
  // i's host token ids [B, T] (read on the first / last stage only); before_forward(i, backend)
  // runs before each forward of micro-batch i (the dropout key). Then the tied embedding's
  // gradient is summed over the embedding group. Returns the mean over the micro-batches of the
  // last stage's losses (0 on the other stages).
  double train_step(const std::vector<const int*>& inputs, const std::vector<const int*>& targets,
                    float loss_weight, const std::function<void(int, Backend&)>& before_forward);

  // The step's end when this rank holds several model chunks (the interleaved schedule), in place
  // of DataParallel's: each chunk's gradients summed over the data-parallel group, the loss
  // (step_loss × loss_share) and the norm (norm_ranges, counted on DP index 0) summed over the
  // world by world_sum, AdamW on every chunk with the global clipping.
  Backend::StepEnd end_step(const AdamWConfig& config, float lr, int step, float clip_grad,
                            double loss_scale, double step_loss, double loss_share,
                            const std::function<void(double*, size_t)>& world_sum);

  // Forward only of one micro-batch through every stage (evaluation): the last stage's loss, 0
  // elsewhere.
  double eval_micro_batch(const int* inputs, const int* targets);

  // Times every forward and backward pass of train_step on clocks[chunk] (the per-stage
  // report; one per model chunk, each on its chunk's backend); empty: none.
  void set_pass_clocks(std::vector<PassClock*> clocks) { clocks_ = std::move(clocks); }

 private:
  void connect_neighbours();  // one transfer to and from each neighbour (construction)
  void reduce_tied_embedding();
  std::vector<Chunk> chunks_;
  const ModelParallelEnv& mp_;
  int m_ = 1;
  std::vector<dist::PipeAction> actions_;
  std::vector<PassClock*> clocks_;
};

}  // namespace gpt
