#include "train/loop/log_lines.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpt {
namespace {
template <typename... Args>
std::string fmt(const char* f, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}
}  // namespace

std::string format_iteration(const IterationLog& l) {
  std::string s = fmt(" iteration %8lld/%8lld |", (long long)l.iteration, (long long)l.train_iters);
  s += fmt(" consumed samples: %12lld |", (long long)l.consumed_samples);
  s += fmt(" elapsed time per iteration (ms): %.1f |", l.elapsed_ms);
  s += fmt(" learning rate: %.6E |", l.learning_rate);
  s += fmt(" global batch size: %5lld |", (long long)l.global_batch_size);
  // Megatron leaves out a loss that no iteration of the interval produced, and the grad norm of a
  // skipped last iteration.
  if (l.lm_loss >= 0) s += fmt(" lm loss: %.6E |", l.lm_loss);
  s += fmt(" loss scale: %.1f |", l.loss_scale);
  if (l.grad_norm >= 0) s += fmt(" grad norm: %.3f |", l.grad_norm);
  s += fmt(" number of skipped iterations: %3lld |", (long long)l.skipped_iterations);
  s += fmt(" number of nan iterations: %3lld |", (long long)l.nan_iterations);
  s += fmt(" tokens per second: %.1f |", l.tokens_per_second);
  s += fmt(" TFLOP/s: %.3f |", l.tflops);
  s += l.mfu_percent < 0 ? std::string(" MFU: n/a |") : fmt(" MFU: %.2f%% |", l.mfu_percent);
  return s;
}

std::string format_validation(const std::string& prefix, double loss) {
  std::string s = " validation loss at " + prefix + " | ";
  s += fmt("lm loss value: %.6E | ", loss);
  s += fmt("lm loss PPL: %.6E | ", std::exp(std::min(20.0, loss)));
  const std::string dashes(s.size() + 1, '-');
  return dashes + "\n" + s + "\n" + dashes;
}

std::string format_memory(int64_t iteration, double allocated, double max_allocated,
                          double reserved, double max_reserved, int rank) {
  return fmt("[Rank %d] (after %lld iterations) memory (MB) | allocated: %.2f | max allocated: "
             "%.2f | reserved: %.2f | max reserved: %.2f",
             rank, (long long)iteration, allocated, max_allocated, reserved, max_reserved);
}

std::string format_timers(const std::vector<TimerRange>& timers) {
  std::string out = "(min, max) time across ranks (ms):";
  for (const TimerRange& t : timers) {
    std::string name = t.name + " ";
    if (name.size() < 48) name.append(48 - name.size(), '.');
    out += "\n    " + name + fmt(": (%.2f, %.2f)", t.min_ms, t.max_ms);
  }
  return out;
}

}  // namespace gpt
