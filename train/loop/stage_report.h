// The per-stage report of pipeline parallelism: each stage's layers, parameters, peak memory and
// forward/backward milliseconds per micro-batch, gathered from every rank once per log interval,
// and the measured bubble = 1 - sum of the stages' compute time / (P x step time). These are the
// inputs a partition planner needs (the metrics file keeps them; train_parallel.sh balances a
// partition from the printed lines).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gpt {

// Marks around a stage's forward and backward passes. On the CPU the wall clock (a pass returns
// when its work is done); on CUDA events recorded on the backend's stream and read only in take(),
// so the host never waits for the GPU in the middle of a step.
class PassClock {
 public:
  struct Totals {
    double forward_ms = 0, backward_ms = 0;
    int64_t forwards = 0, backwards = 0;
  };
  virtual ~PassClock() = default;
  virtual void begin() = 0;               // before a pass's work is queued
  virtual void end(bool backward) = 0;    // after it
  // The passes since the previous take (CUDA: waits for the last one to finish).
  virtual Totals take() = 0;
};

std::unique_ptr<PassClock> make_wall_clock();
// stream: the backend's cudaStream_t (Backend::FlatBuffers::stream); nullptr: the wall clock.
std::unique_ptr<PassClock> make_pass_clock(void* stream);

// One rank's figures for a log interval.
struct StageFigures {
  int stage = 0;  // pipeline rank
  int first_layer = 0, num_layers = 0;
  bool embedding = false, head = false;
  double parameters = 0;        // this rank's (its tensor-parallel shard)
  double max_allocated_mb = 0;  // this rank's peak
  PassClock::Totals passes;     // over the interval
};

// One pipeline stage, over its ranks (tensor and data parallel copies).
struct StageRow {
  int first_layer = 0, num_layers = 0;
  bool embedding = false, head = false;
  double parameters = 0;           // the stage's, summed over its tensor-parallel shards
  double max_allocated_mb = 0;     // the largest peak among its ranks
  double forward_ms = 0, backward_ms = 0;  // per micro-batch, the mean over its ranks
  double compute_ms = 0;           // forward + backward per step, the mean over its ranks
};

struct StageReport {
  std::vector<StageRow> stages;  // P rows
  double step_ms = 0;            // wall time per iteration
  int micro_batches = 1;         // m, per pipeline per step
  double bubble = 0;             // measured
  double ideal_bubble = 0;       // the 1F1B schedule's (P - 1) / (m + P - 1)
};

// Fields per rank in the exchange vector.
constexpr size_t kStageFields = 11;
// This rank's figures at slot `rank` of a world_size x kStageFields vector (zeros elsewhere), so
// that the sum over ranks holds everyone's.
std::vector<double> stage_exchange(const StageFigures& mine, int rank, int world_size,
                                   int64_t iterations);
// The report from the summed exchange vector: P stages, tensor_size ranks per stage shard;
// ranks of one stage are those whose figures name it.
StageReport stage_report(const std::vector<double>& all, int pipeline, int tensor_size,
                         double step_ms, int micro_batches);
// The measured bubble: 1 - sum(compute_ms) / (P x step_ms), clamped to [0, 1].
double measured_bubble(const std::vector<double>& stage_compute_ms, double step_ms);

// Megatron-like lines, one per stage and the bubble's.
std::vector<std::string> format_stage_report(const StageReport& r, int64_t iteration);
// Fields for the metrics file's interval record (",\"stage\":...", starting with a comma):
// this rank's stage and timings, the bubble and every stage's row.
std::string stage_report_json(const StageReport& r, int my_stage);

}  // namespace gpt
