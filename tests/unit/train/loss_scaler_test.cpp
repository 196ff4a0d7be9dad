// The fp16 loss scaler against Megatron's DynamicGradScaler rules, step by step.
#include <doctest/doctest.h>

#include "train/loop/loss_scaler.h"

TEST_CASE("dynamic loss scale: hysteresis before backoff, growth after a clean window") {
  gpt::LossScaler::Config c;
  c.initial_scale = 1024;
  c.window = 3;
  c.hysteresis = 2;
  c.min_scale = 256;
  gpt::LossScaler s(c);
  s.update(true);  // first overflow: hysteresis 2 -> 1, scale kept
  CHECK(s.scale() == 1024);
  s.update(true);  // second: backoff
  CHECK(s.scale() == 512);
  s.update(true);  // hysteresis exhausted: every overflow backs off, not below min
  CHECK(s.scale() == 256);
  s.update(true);
  CHECK(s.scale() == 256);
  s.update(false);
  s.update(false);
  CHECK(s.scale() == 256);
  s.update(false);  // third clean iteration in a row: grow, hysteresis restored
  CHECK(s.scale() == 512);
  s.update(true);  // one overflow is tolerated again
  CHECK(s.scale() == 512);
  s.update(false);
  s.update(false);
  s.update(true);  // an overflow resets the growth count and uses the last hysteresis credit
  CHECK(s.scale() == 256);
  CHECK(s.state().growth_tracker == 0);
}

TEST_CASE("static loss scale never changes; state round-trips") {
  gpt::LossScaler::Config c;
  c.dynamic = false;
  c.initial_scale = 128;
  gpt::LossScaler s(c);
  for (int i = 0; i < 5; ++i) s.update(i % 2 == 0);
  CHECK(s.scale() == 128);
  gpt::LossScaler d{gpt::LossScaler::Config{}};
  CHECK(d.scale() == 4294967296.0);
  d.restore({64, 5, 1});
  CHECK(d.scale() == 64);
  CHECK(d.state().growth_tracker == 5);
}
