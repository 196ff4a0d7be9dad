#include "train/loop/schedule.h"

#include <cmath>

#include "common/cli/error.h"
#include "train/loop/args.h"

namespace gpt {

double LrSchedule::at(int64_t num_steps) const {
  // Linear warmup from 0 (Megatron's init_lr default).
  if (warmup_steps > 0 && num_steps <= warmup_steps)
    return max_lr * double(num_steps) / double(warmup_steps);
  if (style == "constant") return max_lr;
  if (num_steps > decay_steps) return min_lr;
  const double ratio = double(num_steps - warmup_steps) / double(decay_steps - warmup_steps);
  const double coeff = style == "linear" ? 1.0 - ratio : 0.5 * (std::cos(M_PI * ratio) + 1.0);
  return min_lr + coeff * (max_lr - min_lr);
}

LrSchedule LrSchedule::from_args(const TrainArgs& a) {
  LrSchedule s;
  s.max_lr = a.lr;
  s.min_lr = a.min_lr;
  s.style = a.lr_decay_style;
  const int64_t gbs = a.global_batch_size;
  if (a.train_iters > 0) {
    s.decay_steps = (a.lr_decay_iters > 0 ? a.lr_decay_iters : a.train_iters) * gbs;
    s.warmup_steps = a.lr_warmup_fraction >= 0
                         ? int64_t(a.lr_warmup_fraction * double(s.decay_steps))
                         : a.lr_warmup_iters * gbs;
  } else {
    s.decay_steps = a.lr_decay_samples > 0 ? a.lr_decay_samples : a.train_samples;
    s.warmup_steps = a.lr_warmup_fraction >= 0
                         ? int64_t(a.lr_warmup_fraction * double(s.decay_steps))
                         : a.lr_warmup_samples;
  }
  if (s.style != "constant" && s.decay_steps <= s.warmup_steps)
    throw suite::UsageError("the learning-rate warmup (" + std::to_string(s.warmup_steps) +
                            " samples) must be shorter than the decay (" +
                            std::to_string(s.decay_steps) + " samples)");
  return s;
}

}  // namespace gpt
