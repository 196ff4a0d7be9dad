#include "train/loop/loss_scaler.h"

#include <algorithm>

namespace gpt {

LossScaler::LossScaler(const Config& c) : c_(c) {
  st_.scale = c.initial_scale;
  st_.hysteresis_tracker = c.hysteresis;
}

void LossScaler::update(bool found_inf) {
  if (!c_.dynamic) return;
  if (found_inf) {
    st_.growth_tracker = 0;
    if (--st_.hysteresis_tracker <= 0) st_.scale = std::max(st_.scale * c_.backoff, c_.min_scale);
    return;
  }
  if (++st_.growth_tracker == c_.window) {
    st_.growth_tracker = 0;
    st_.hysteresis_tracker = c_.hysteresis;
    st_.scale *= c_.growth;
  }
}

}  // namespace gpt
