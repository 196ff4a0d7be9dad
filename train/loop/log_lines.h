// Megatron-format log lines (training.py training_log / evaluate_and_print_results,
// utils report_memory), plus the throughput fields this trainer adds at the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

struct IterationLog {
  int64_t iteration = 0, train_iters = 0, consumed_samples = 0;
  double elapsed_ms = 0;       // average per iteration over the interval
  double learning_rate = 0;
  int64_t global_batch_size = 0;
  double lm_loss = 0;          // average over the interval's non-skipped iterations (< 0: none)
  double loss_scale = 1.0;
  double grad_norm = 0;        // of the last iteration, as Megatron (< 0: it was skipped)
  int64_t skipped_iterations = 0, nan_iterations = 0;
  double tokens_per_second = 0, tflops = 0;
  double mfu_percent = -1;     // < 0: peak unknown (printed as n/a)
};

// " iteration        N/       M | consumed samples: ... | ... | number of nan iterations:   0 |"
// followed by " tokens per second: ... | TFLOP/s: ... | MFU: ... |".
std::string format_iteration(const IterationLog& log);

// The dash-framed " validation loss at iteration N | lm loss value: ... | lm loss PPL: ... |"
// (prefix "iteration N" or "the end of training for val data"). PPL = exp(min(20, loss)).
std::string format_validation(const std::string& prefix, double loss);

// "[Rank R] (after N iterations) memory (MB) | allocated: ... | max allocated: ... | reserved: ...
// | max reserved: ..."
std::string format_memory(int64_t iteration, double allocated, double max_allocated,
                          double reserved, double max_reserved, int rank = 0);

// Megatron's timers: "(min, max) time across ranks (ms):" then per timer
// "    forward-backward ....: (12.34, 12.56)" (the name and a space dotted to 48 columns).
struct TimerRange {
  std::string name;
  double min_ms = 0, max_ms = 0;
};
std::string format_timers(const std::vector<TimerRange>& timers);

}  // namespace gpt
