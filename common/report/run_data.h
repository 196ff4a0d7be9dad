// One training run as gpt-report draws it, whatever it was read from (a gpt-train metrics file or
// folder of them, a Megatron or gpt-train text log). Unknown values are NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace suite::report {

inline constexpr double kUnknown = NAN;

// One logged interval (an iteration line, a "train" metrics record).
struct TrainPoint {
  int64_t iteration = 0;
  double samples = kUnknown, tokens = kUnknown, seconds = kUnknown;  // x axes
  double lm_loss = kUnknown, learning_rate = kUnknown, grad_norm = kUnknown, loss_scale = kUnknown,
         tokens_per_second = kUnknown, mfu_percent = kUnknown;
  double elapsed_ms = kUnknown;  // per iteration, averaged over the interval
  double tflops_per_gpu = kUnknown;
  double batch_size = kUnknown;
  double wall_time = kUnknown;  // unix seconds, when the source has it
};

struct ValidPoint {
  int64_t iteration = 0;
  double samples = kUnknown, tokens = kUnknown, seconds = kUnknown;
  double lm_loss = kUnknown;
};

// Per rank: peak memory over the run (MB) and, for a pipeline stage, the mean milliseconds per
// iteration spent computing and waiting.
struct RankStats {
  double max_allocated_mb = kUnknown, max_reserved_mb = kUnknown;
  double compute_ms = kUnknown, wait_ms = kUnknown;
};

struct Warning {
  std::string where;  // "file:line" or "file"
  std::string what;
};

struct RunData {
  std::string name;    // shown in legends
  std::string source;  // the path given
  std::string kind;    // "gpt-train metrics", "Megatron log", ...
  std::vector<std::pair<std::string, std::string>> config;  // header-table rows, in order
  int64_t seq_length = 0;
  std::vector<TrainPoint> train;
  std::vector<ValidPoint> valid;
  std::map<int, RankStats> ranks;

  void set(const std::string& key, const std::string& value) {
    for (auto& kv : config)
      if (kv.first == key) {
        kv.second = value;
        return;
      }
    config.emplace_back(key, value);
  }
  std::string get(const std::string& key) const {
    for (const auto& kv : config)
      if (kv.first == key) return kv.second;
    return "";
  }
};

// Fills what a source leaves out and can be derived: samples from iterations x batch, tokens from
// samples x sequence length, tokens/s from the batch and the iteration time, MFU from TFLOP/s
// per GPU and peak_tflops (> 0), and the training time as the sum of iteration times.
void derive(RunData& run, double peak_tflops);

}  // namespace suite::report
