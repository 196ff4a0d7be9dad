// The fp16 loss scaler of Megatron-LM (optimizer/grad_scaler.py): the loss gradient is multiplied
// by the scale so that small fp16 gradients do not flush to zero; an iteration whose gradients
// overflow (inf/nan) is skipped. Dynamic: after `hysteresis` overflows the scale is multiplied by
// backoff (not below min_scale); after `window` clean iterations in a row it grows by `growth` and
// the hysteresis budget is restored. Static (--loss-scale): the scale never changes.
#pragma once

#include <cstdint>

namespace gpt {

struct LossScalerState {
  double scale = 1.0;
  int64_t growth_tracker = 0;
  int64_t hysteresis_tracker = 0;
};

class LossScaler {
 public:
  // Megatron's defaults: --initial-loss-scale 2^32, --min-loss-scale 1, --loss-scale-window 1000,
  // --hysteresis 2, growth 2, backoff 0.5.
  struct Config {
    bool dynamic = true;
    double initial_scale = 4294967296.0, min_scale = 1.0;
    int64_t window = 1000, hysteresis = 2;
    double growth = 2.0, backoff = 0.5;
  };
  explicit LossScaler(const Config& c);

  double scale() const { return st_.scale; }
  // After each iteration: found_inf = the (scaled) gradients held an inf or nan.
  void update(bool found_inf);

  const LossScalerState& state() const { return st_; }
  void restore(const LossScalerState& s) { st_ = s; }

 private:
  Config c_;
  LossScalerState st_;
};

}  // namespace gpt
