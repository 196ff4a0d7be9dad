#include "train/loop/run_recorder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "common/cli/error.h"
#include "common/jsonl/json_writer.h"

#ifndef SUITE_GIT_REV
#define SUITE_GIT_REV "unknown"
#endif
#ifndef SUITE_VERSION
#define SUITE_VERSION "0.0.0"
#endif

namespace gpt {
namespace {

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream o;
  o << std::setprecision(9) << v;
  return o.str();
}

// Unix time with milliseconds (9 significant digits would round it to tens of seconds).
std::string seconds(double t) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", t);
  return b;
}

void open_append(std::ofstream& f, const std::string& path) {
  f.open(path, std::ios::app);
  if (!f) throw suite::ToolError(path, "cannot open metrics file");
}

}  // namespace

std::string rank_metrics_path(const std::string& path, int rank) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  const std::string tag = ".rank" + std::to_string(rank);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1))
    return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

RunRecorder::RunRecorder(const TrainArgs& args, const ModelConfig& model, const std::string& device,
                         int rank, int world_size)
    : a_(args), model_(model), device_(device), rank_(rank), world_size_(world_size) {
  const bool last = rank == world_size - 1;
  if (!a_.metrics_file.empty()) {
    if (world_size > 1) open_append(rank_file_, rank_metrics_path(a_.metrics_file, rank));
    if (last) open_append(main_file_, a_.metrics_file);
  }
  if (last && !a_.tensorboard_dir.empty())
    tb_ = std::make_unique<TensorBoardWriter>(a_.tensorboard_dir);
  write_line(config_json());
}

RunRecorder::~RunRecorder() {
  if (tb_) tb_->flush();
}

std::string RunRecorder::config_json() const {
  const int t = a_.layout.tensor, p = a_.layout.pipeline;
  const int d = std::max(1, world_size_ / (t * p));
  std::string j = "{\"type\":\"config\",\"time\":" + seconds(unix_time());
  j += ",\"rank\":" + std::to_string(rank_) + ",\"world_size\":" + std::to_string(world_size_);
  j += ",\"model\":{\"num_layers\":" + std::to_string(model_.num_layers) +
       ",\"hidden_size\":" + std::to_string(model_.hidden_size) +
       ",\"num_attention_heads\":" + std::to_string(model_.num_heads) +
       ",\"ffn_hidden_size\":" + std::to_string(model_.ffn_hidden_size) +
       ",\"seq_length\":" + std::to_string(model_.seq_length) +
       ",\"max_position_embeddings\":" + std::to_string(model_.max_position_embeddings) +
       ",\"vocab_size\":" + std::to_string(model_.vocab_size) +
       ",\"padded_vocab_size\":" + std::to_string(model_.padded_vocab_size) +
       ",\"parameters\":" + std::to_string(model_.num_parameters()) + "}";
  j += ",\"layout\":{\"tensor\":" + std::to_string(t) + ",\"pipeline\":" + std::to_string(p) +
       ",\"data\":" + std::to_string(d) + "}";
  std::string part = a_.layout.stage_layers.empty() ? std::to_string(model_.num_layers)
                                                     : a_.layout.partition_text();
  std::replace(part.begin(), part.end(), '-', ',');
  j += ",\"partition\":[" + part + "]";  // layers per pipeline stage
  j += ",\"device\":";
  suite::append_json_string(j, device_);
  j += ",\"gpus\":" + std::to_string(device_ == "cuda" ? world_size_ : 0);
  j += ",\"micro_batch_size\":" + std::to_string(a_.micro_batch_size) +
       ",\"global_batch_size\":" + std::to_string(a_.global_batch_size) +
       ",\"train_iters\":" + std::to_string(total_train_iters(a_));
  j += ",\"precision\":\"";
  j += a_.bf16 ? "bf16" : a_.fp16 ? "fp16" : "fp32";
  j += "\",\"version\":\"" SUITE_VERSION "\",\"git_revision\":";
  suite::append_json_string(j, SUITE_GIT_REV);
  j += ",\"command_line\":";
  suite::append_json_string(j, a_.command_line);
  return j + "}";
}

std::string RunRecorder::interval_json(const IntervalRecord& r, int64_t seq_length,
                                       double wall_time) {
  const IterationLog& l = r.log;
  std::ostringstream j;
  j << std::setprecision(9) << "{\"type\":\"train\",\"iteration\":" << l.iteration
    << ",\"consumed_samples\":" << l.consumed_samples
    << ",\"tokens\":" << l.consumed_samples * seq_length << ",\"wall_time\":" << seconds(wall_time)
    << ",\"lm_loss\":" << (l.lm_loss < 0 ? "null" : num(l.lm_loss))
    << ",\"learning_rate\":" << num(l.learning_rate)
    << ",\"grad_norm\":" << (l.grad_norm < 0 ? "null" : num(l.grad_norm))
    << ",\"loss_scale\":" << num(l.loss_scale) << ",\"batch_size\":" << l.global_batch_size
    << ",\"elapsed_ms_per_iteration\":" << num(l.elapsed_ms)
    << ",\"tokens_per_second\":" << num(l.tokens_per_second) << ",\"tflops\":" << num(l.tflops)
    << ",\"mfu_percent\":" << (l.mfu_percent < 0 ? "null" : num(l.mfu_percent))
    << ",\"skipped_iterations\":" << l.skipped_iterations
    << ",\"nan_iterations\":" << l.nan_iterations
    << ",\"mem_allocated_mb\":" << num(r.memory.allocated_mb)
    << ",\"mem_max_allocated_mb\":" << num(r.memory.max_allocated_mb)
    << ",\"mem_reserved_mb\":" << num(r.memory.reserved_mb)
    << ",\"mem_max_reserved_mb\":" << num(r.memory.max_reserved_mb);
  if (r.stage_compute_ms >= 0) j << ",\"stage_compute_ms\":" << num(r.stage_compute_ms);
  if (r.stage_wait_ms >= 0) j << ",\"stage_wait_ms\":" << num(r.stage_wait_ms);
  j << "}";
  return j.str();
}

void RunRecorder::write_line(const std::string& json) {
  for (std::ofstream* f : {&rank_file_, &main_file_})
    if (f->is_open()) *f << json << "\n" << std::flush;
}

// Megatron's training_log: each scalar against the iteration and, as "<tag> vs samples", against
// the consumed samples.
void RunRecorder::step(const StepRecord& s) {
  if (!tb_ || s.iteration % a_.tensorboard_log_interval != 0) return;
  auto both = [&](const std::string& tag, double v) {
    tb_->add_scalar(tag, v, s.iteration);
    tb_->add_scalar(tag + " vs samples", v, s.consumed_samples);
  };
  both("learning-rate", s.learning_rate);
  both("batch-size", double(s.batch_size));
  if (std::isfinite(s.lm_loss)) both("lm loss", s.lm_loss);
  both("loss-scale", s.loss_scale);
  if (s.grad_norm >= 0) both("grad-norm", s.grad_norm);
}

void RunRecorder::interval(const IntervalRecord& r) {
  if (tb_) {
    const IterationLog& l = r.log;
    tb_->add_scalar("tokens-per-second", l.tokens_per_second, l.iteration);
    if (l.mfu_percent >= 0) tb_->add_scalar("mfu", l.mfu_percent, l.iteration);
    if (a_.log_timers_to_tensorboard)
      tb_->add_scalar("iteration-time", l.elapsed_ms / 1000.0, l.iteration);
    if (a_.log_memory_to_tensorboard) {
      constexpr double kMB = 1024.0 * 1024.0;
      tb_->add_scalar("mem-reserved-bytes", r.memory.reserved_mb * kMB, l.iteration);
      tb_->add_scalar("mem-allocated-bytes", r.memory.allocated_mb * kMB, l.iteration);
      tb_->add_scalar("mem-max-allocated-bytes", r.memory.max_allocated_mb * kMB, l.iteration);
    }
    tb_->flush();  // before the metrics line: a metrics record implies its events are on disk
  }
  write_line(interval_json(r, model_.seq_length, unix_time()));
}

void RunRecorder::validation(int64_t iteration, int64_t consumed_samples, double loss) {
  if (tb_) {
    tb_->add_scalar("lm loss validation", loss, iteration);
    tb_->add_scalar("lm loss validation vs samples", loss, consumed_samples);
    tb_->flush();
  }
  write_line("{\"type\":\"validation\",\"iteration\":" + std::to_string(iteration) +
             ",\"consumed_samples\":" + std::to_string(consumed_samples) +
             ",\"tokens\":" + std::to_string(consumed_samples * model_.seq_length) +
             ",\"wall_time\":" + seconds(unix_time()) + ",\"lm_loss\":" + num(loss) + "}");
}

}  // namespace gpt
