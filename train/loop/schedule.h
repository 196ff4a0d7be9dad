// Megatron's learning-rate schedule (OptimizerParamScheduler.get_lr), counted in samples.
//
// With --train-iters, Megatron converts iterations to samples: warmup = warmup_iters · GBS (or
// fraction · decay), decay = decay_iters · GBS. The scheduler starts at 0 and advances by GBS after
// every successful iteration, so iteration k (1-based) trains with lr(k-1 · GBS) and the value
// logged for iteration k is lr(k · GBS), the one the next iteration will use.
#pragma once

#include <cstdint>
#include <string>

namespace gpt {

struct TrainArgs;

struct LrSchedule {
  double max_lr = 0, min_lr = 0;
  std::string style = "linear";  // constant | linear | cosine
  int64_t warmup_steps = 0;      // samples
  int64_t decay_steps = 0;       // samples

  double at(int64_t num_steps) const;
  static LrSchedule from_args(const TrainArgs& a);
};

}  // namespace gpt
