// What a training run leaves behind for people watching it: the metrics file (JSON lines: a config
// record, then one record per log interval and per evaluation) and the TensorBoard events. The
// trainer hands over each iteration's values, each log interval's and each validation loss.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "train/backend/backend.h"
#include "train/loop/args.h"
#include "train/loop/log_lines.h"
#include "train/loop/tensorboard_writer.h"

namespace gpt {

// One iteration's values, as Megatron writes them to TensorBoard every --tensorboard-log-interval.
struct StepRecord {
  int64_t iteration = 0, consumed_samples = 0, batch_size = 0;
  double lm_loss = 0;  // not finite: the iteration was skipped (no loss written)
  double learning_rate = 0, loss_scale = 1.0;
  double grad_norm = -1;  // < 0: skipped (not written)
};

// A log interval: the averages printed on the iteration line, the memory, and for a pipeline
// stage the milliseconds per iteration spent computing and waiting (< 0: unknown, left out).
struct IntervalRecord {
  IterationLog log;
  MemoryStats memory;
  double stage_compute_ms = -1, stage_wait_ms = -1;
  // More fields of a pipeline run (stage_report_json: the stages' figures and the bubble), each
  // starting with a comma; empty: none.
  std::string stage_json;
};

// "m.jsonl" -> "m.rank3.jsonl"; a name without an extension gets ".rank3" at the end.
std::string rank_metrics_path(const std::string& path, int rank);

class RunRecorder {
 public:
  // Opens the metrics file(s) of this rank (appending) and, on the last rank, the TensorBoard
  // writer; writes the config record. With world_size > 1, rank r writes PATH.rank<r> and the last
  // rank also PATH. Throws suite::ToolError when a file cannot be opened.
  RunRecorder(const TrainArgs& args, const ModelConfig& model, const std::string& device,
              int rank = 0, int world_size = 1);
  ~RunRecorder();

  void step(const StepRecord& s);
  // Writes the interval's metrics record and TensorBoard scalars, then flushes both.
  void interval(const IntervalRecord& r);
  void validation(int64_t iteration, int64_t consumed_samples, double loss);

  // The config record (exposed for tests).
  std::string config_json() const;
  static std::string interval_json(const IntervalRecord& r, int64_t seq_length, double wall_time);

 private:
  void write_line(const std::string& json);
  const TrainArgs& a_;
  ModelConfig model_;
  std::string device_;
  int rank_, world_size_;
  std::ofstream rank_file_, main_file_;
  std::unique_ptr<TensorBoardWriter> tb_;
};

}  // namespace gpt
