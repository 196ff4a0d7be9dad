#include "common/dataset/sample_counts.h"

#include <string>

#include "common/cli/error.h"

namespace suite::dataset {

namespace {
uint64_t checked_mul(uint64_t a, uint64_t b, const char* what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw ToolError(std::string(what) + ": sample count overflows 64 bits");
  return r;
}
}  // namespace

SampleCounts requested_sample_counts(const TrainingSchedule& s) {
  if (s.global_batch_size == 0) throw ToolError("--global-batch-size: must be at least 1");
  if (s.eval_interval == 0) throw ToolError("--eval-interval: must be at least 1");
  SampleCounts c;
  c.train = s.train_samples ? *s.train_samples : checked_mul(s.train_iters, s.global_batch_size, "--train-iters");
  const uint64_t evals = s.train_iters / s.eval_interval + 1;
  c.valid = checked_mul(checked_mul(evals, s.eval_iters, "--eval-iters"), s.global_batch_size, "--eval-iters");
  c.test = checked_mul(s.eval_iters, s.global_batch_size, "--eval-iters");
  return c;
}

}  // namespace suite::dataset
