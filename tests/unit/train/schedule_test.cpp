// Megatron learning-rate schedule values, computed by hand from OptimizerParamScheduler.get_lr.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/unit/train/train_helpers.h"
#include "train/loop/schedule.h"

TEST_CASE("cosine schedule with warmup, in samples as Megatron counts them") {
  // --train-iters 100 --global-batch-size 8 --lr 1e-3 --min-lr 1e-4 --lr-warmup-iters 10
  auto a = train_test::parse({"--num-layers", "1", "--hidden-size", "8", "--num-attention-heads",
                              "1", "--seq-length", "4", "--global-batch-size", "8",
                              "--micro-batch-size", "8", "--train-iters", "100", "--lr", "1e-3",
                              "--min-lr", "1e-4", "--lr-decay-style", "cosine",
                              "--lr-warmup-iters", "10", "--mock-data", "--vocab-size", "10"});
  auto s = gpt::LrSchedule::from_args(a);
  CHECK(s.warmup_steps == 80);
  CHECK(s.decay_steps == 800);
  CHECK(s.at(0) == 0.0);                                  // iteration 1 trains with lr 0
  CHECK(s.at(40) == doctest::Approx(0.5e-3));            // half way through warmup
  CHECK(s.at(80) == doctest::Approx(1e-3));              // end of warmup
  // decay ratio (440 - 80) / 720 = 0.5 → coeff 0.5 → 1e-4 + 0.5 · 9e-4
  CHECK(s.at(440) == doctest::Approx(5.5e-4));
  // ratio 0.25 → coeff 0.5 (cos(pi/4) + 1) = 0.853553
  CHECK(s.at(260) == doctest::Approx(1e-4 + 0.8535533905932737 * 9e-4));
  CHECK(s.at(800) == doctest::Approx(1e-4));
  CHECK(s.at(801) == doctest::Approx(1e-4));              // past decay: min lr
}

TEST_CASE("linear and constant schedules; warmup fraction; train-samples") {
  auto base = std::vector<std::string>{"--num-layers", "1", "--hidden-size", "8",
                                       "--num-attention-heads", "1", "--seq-length", "4",
                                       "--global-batch-size", "4", "--mock-data", "--vocab-size",
                                       "10", "--lr", "2e-3", "--min-lr", "0"};
  auto with = [&](std::vector<std::string> extra) {
    auto f = base;
    f.insert(f.end(), extra.begin(), extra.end());
    return gpt::LrSchedule::from_args(train_test::parse(f));
  };
  auto lin = with({"--train-iters", "50", "--lr-decay-style", "linear", "--lr-warmup-fraction",
                   "0.1", "--lr-decay-iters", "40"});
  CHECK(lin.decay_steps == 160);
  CHECK(lin.warmup_steps == 16);
  CHECK(lin.at(8) == doctest::Approx(1e-3));
  CHECK(lin.at(16 + 72) == doctest::Approx(1e-3));  // ratio 0.5
  CHECK(lin.at(180) == 0.0);
  auto con = with({"--train-iters", "50", "--lr-decay-style", "constant", "--lr-warmup-iters", "5"});
  CHECK(con.at(10) == doctest::Approx(1e-3));
  CHECK(con.at(100) == doctest::Approx(2e-3));
  auto smp = with({"--train-samples", "400", "--lr-decay-style", "linear", "--lr-warmup-samples",
                   "40"});
  CHECK(smp.decay_steps == 400);
  CHECK(smp.at(220) == doctest::Approx(1e-3));
  CHECK(gpt::total_train_iters(train_test::parse([&] {
          auto f = base;
          f.insert(f.end(), {"--train-samples", "402"});
          return f;
        }())) == 100);
}
