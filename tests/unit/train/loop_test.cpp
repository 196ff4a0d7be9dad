// Training-loop behaviour: loss falls, resume is exact, log lines parse like Megatron's,
// bad input fails before compute with one clear message.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <regex>

#include "common/cli/error.h"
#include "tests/unit/train/train_helpers.h"
#include "train/loop/log_lines.h"
#include "train/model/checkpoint.h"

using train_test::run;
using train_test::tiny_flags;

TEST_CASE("loss falls when a tiny model trains on a small mock pool") {
  auto r = run(tiny_flags({"--train-iters", "30"}));
  REQUIRE(r.losses.size() == 30);
  CHECK(r.losses.front() == doctest::Approx(std::log(40.0)).epsilon(0.05));  // ~uniform at init
  CHECK(r.losses.back() < r.losses.front() - 0.5);
}

TEST_CASE("resume: 20 straight iterations equal 10 + save + load + 10, bit for bit") {
  train_test::TempDir dir("gpt-train-resume");
  const std::string ck = dir / "ckpt";
  auto straight = run(tiny_flags({"--train-iters", "20"}));
  auto first = run(tiny_flags({"--train-iters", "20", "--save", ck, "--save-interval", "10",
                               "--exit-interval", "10"}));
  CHECK(first.exited_early);
  CHECK(first.final_iteration == 10);
  auto second = run(tiny_flags({"--train-iters", "20", "--load", ck}));
  REQUIRE(first.losses.size() == 10);
  REQUIRE(second.losses.size() == 10);
  for (int i = 0; i < 10; ++i) {
    CHECK(first.losses[i] == straight.losses[i]);
    CHECK(second.losses[i] == straight.losses[10 + i]);
  }
}

TEST_CASE("--save D --load D on a first run starts from scratch with Megatron's warning") {
  train_test::TempDir dir("gpt-train-first-load");
  const std::string ck = dir / "ckpt";
  auto straight = run(tiny_flags({"--train-iters", "6"}));
  std::string log;
  auto first = run(tiny_flags({"--train-iters", "6", "--save", ck, "--load", ck}), &log);
  CHECK(log.find("will not load any checkpoints and will start from random") != std::string::npos);
  CHECK(first.losses == straight.losses);
  CHECK(gpt::load_checkpoint(ck).state.iteration == 6);
}

TEST_CASE("hidden dropout: losses differ from no dropout, runs repeat, resume is exact") {
  train_test::TempDir dir("gpt-train-dropout");
  const std::string ck = dir / "ckpt";
  auto none = run(tiny_flags({"--train-iters", "20"}));
  auto straight = run(tiny_flags({"--train-iters", "20", "--hidden-dropout", "0.1"}));
  auto again = run(tiny_flags({"--train-iters", "20", "--hidden-dropout", "0.1"}));
  CHECK(straight.losses == again.losses);
  CHECK(straight.losses != none.losses);
  CHECK(straight.losses.back() < straight.losses.front() - 0.5);
  run(tiny_flags({"--train-iters", "20", "--hidden-dropout", "0.1", "--save", ck,
                  "--exit-interval", "10"}));
  auto second = run(tiny_flags({"--train-iters", "20", "--hidden-dropout", "0.1", "--load", ck}));
  REQUIRE(second.losses.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(second.losses[i] == straight.losses[10 + i]);
}

TEST_CASE("attention dropout: losses differ from hidden dropout alone, repeat, resume exactly") {
  train_test::TempDir dir("gpt-train-att-dropout");
  const std::string ck = dir / "ckpt";
  const std::vector<std::string> drop = {"--train-iters", "20", "--hidden-dropout", "0.1",
                                         "--attention-dropout", "0.1"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), drop.begin(), drop.end());
    return tiny_flags(extra);
  };
  auto hidden = run(tiny_flags({"--train-iters", "20", "--hidden-dropout", "0.1"}));
  auto straight = run(with({}));
  auto again = run(with({}));
  CHECK(straight.losses == again.losses);
  CHECK(straight.losses != hidden.losses);
  CHECK(straight.losses.back() < straight.losses.front() - 0.5);
  run(with({"--save", ck, "--exit-interval", "10"}));
  auto second = run(with({"--load", ck}));
  REQUIRE(second.losses.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(second.losses[i] == straight.losses[10 + i]);
}

TEST_CASE("--fp16 loss scaling: a power-of-two scale changes no bit; overflows are skipped") {
  // The cpu backend computes in fp32, where scaling by 2^k and back is exact.
  auto fp32 = run(tiny_flags({"--train-iters", "12"}));
  auto scaled = run(tiny_flags({"--train-iters", "12", "--fp16", "--loss-scale", "1024"}));
  CHECK(scaled.losses == fp32.losses);
  // 2^140 overflows fp32: iterations are skipped and the scale backs off until it fits.
  std::string log;
  auto dyn = run(tiny_flags({"--train-iters", "40", "--log-interval", "40", "--fp16",
                             "--initial-loss-scale", "1.3937965749081639e42", "--hysteresis", "1"}),
                 &log);
  std::smatch m;
  REQUIRE(std::regex_search(
      log, m,
      std::regex(R"(loss scale: ([0-9.]+) \|(?: grad norm: [0-9.]+ \|)? number of skipped iterations: +(\d+) \| number of nan iterations: +(\d+))")));
  const double final_scale = std::stod(m[1]);
  const int skipped = std::stoi(m[2]);
  CHECK(skipped > 0);
  CHECK(skipped < 40);
  CHECK(std::stoi(m[3]) == 0);  // the losses themselves were finite
  CHECK(final_scale < 1.3937965749081639e42);
  CHECK(final_scale > 1.0);
  CHECK(dyn.losses.back() < dyn.losses.front());
  // resume carries the scaler state: 20 + 20 equals 40 straight
  train_test::TempDir dir("gpt-train-fp16");
  const std::string ck = dir / "ckpt";
  auto flags = tiny_flags({"--train-iters", "40", "--log-interval", "40", "--fp16",
                           "--initial-loss-scale", "1.3937965749081639e42", "--hysteresis", "1",
                           "--loss-scale-window", "4"});
  auto straight = run(flags);
  auto with_save = flags;
  for (auto w : {"--save", ck.c_str(), "--exit-interval", "20"}) with_save.push_back(w);
  run(with_save);
  auto resumed = flags;
  resumed.push_back("--load");
  resumed.push_back(ck);
  auto second = run(resumed);
  REQUIRE(second.losses.size() == 20);
  for (int i = 0; i < 20; ++i) CHECK(second.losses[i] == straight.losses[20 + i]);
}

TEST_CASE("checkpoint of another shape or a corrupt checkpoint is refused, naming what differs") {
  train_test::TempDir dir("gpt-train-ckpt");
  const std::string ck = dir / "ckpt";
  run(tiny_flags({"--train-iters", "3", "--save", ck}));
  auto other = tiny_flags({"--train-iters", "4", "--load", ck});
  other[3] = "32";  // --hidden-size
  CHECK_THROWS_WITH_AS(run(other), doctest::Contains("--hidden-size: checkpoint 16, this run 32"),
                       suite::ToolError);
  // flip one byte in the weights
  const std::string file = ck + "/iter_0000003/shard_0_of_1.bin";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-100, std::ios::end);
    f.put('\x7f');
  }
  CHECK_THROWS_WITH_AS(gpt::load_checkpoint(ck), doctest::Contains("checksum"), suite::ToolError);
  CHECK_THROWS_WITH_AS(gpt::load_checkpoint(dir / "nothing"),
                       doctest::Contains("latest_checkpointed_iteration.txt"), suite::ToolError);
}

TEST_CASE("log lines match the regexes Megatron log parsers use") {
  gpt::IterationLog l;
  l.iteration = 100;
  l.train_iters = 500;
  l.consumed_samples = 6400;
  l.elapsed_ms = 1234.5;
  l.learning_rate = 1.234567e-4;
  l.global_batch_size = 64;
  l.lm_loss = 5.678901;
  l.grad_norm = 1.234;
  const std::string s = gpt::format_iteration(l);
  CHECK(s.rfind(" iteration      100/     500 | consumed samples:         6400 | elapsed time per "
                "iteration (ms): 1234.5 | learning rate: 1.234567E-04 | global batch size:    64 "
                "| lm loss: 5.678901E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped "
                "iterations:   0 | number of nan iterations:   0 |",
                0) == 0);
  // an interval whose every iteration was skipped has no loss; a skipped last one no grad norm
  gpt::IterationLog skipped = l;
  skipped.lm_loss = -1;
  skipped.grad_norm = -1;
  CHECK(gpt::format_iteration(skipped).find("lm loss") == std::string::npos);
  CHECK(gpt::format_iteration(skipped).find("| loss scale: 1.0 | number of skipped") !=
        std::string::npos);
  std::smatch m;
  CHECK(std::regex_search(s, m, std::regex(R"(iteration\s+(\d+)/\s*(\d+))")));
  CHECK(m[1] == "100");
  CHECK(std::regex_search(s, m, std::regex(R"(lm loss: ([\d.]+E[+-]\d+))")));
  CHECK(std::regex_search(s, m, std::regex(R"(elapsed time per iteration \(ms\): ([\d.]+))")));
  CHECK(std::regex_search(s, std::regex(R"(tokens per second: [\d.]+ \| TFLOP/s: [\d.]+ \| MFU: )")));
  const std::string v = gpt::format_validation("iteration 100", 2.0);
  CHECK(std::regex_search(v, m, std::regex(R"(validation loss at iteration (\d+) \| lm loss value: ([\d.]+E[+-]\d+) \| lm loss PPL: ([\d.]+E[+-]\d+) \|)")));
  CHECK(m[3] == "7.389056E+00");
  CHECK(gpt::format_memory(10, 1, 2, 3, 4) ==
        "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1.00 | max allocated: 2.00 | "
        "reserved: 3.00 | max reserved: 4.00");
}

TEST_CASE("bad input gives one clear error") {
  auto usage = [](std::vector<std::string> extra, const char* needle) {
    CHECK_THROWS_WITH_AS(run(tiny_flags(extra)), doctest::Contains(needle), suite::UsageError);
  };
  usage({"--train-iters", "4", "--max-position-embeddings", "4"}, "--max-position-embeddings");
  usage({"--train-iters", "4", "--global-batch-size", "5"}, "is not divisible by micro batch size (2) times data parallel size (1)");
  usage({}, "--train-iters");
  usage({"--train-iters", "2", "--train-samples", "8"}, "--train-samples");
  usage({"--train-iters", "2", "--attention-dropout", "1"}, "--attention-dropout");
  usage({"--train-iters", "2", "--attention-dropout", "0.1", "--seq-length", "65537"},
        "--seq-length up to 65536");
  usage({"--train-iters", "2", "--hidden-dropout", "1"}, "--hidden-dropout");
  usage({"--train-iters", "2", "--fp16", "--hysteresis", "0"}, "--hysteresis");
  usage({"--train-iters", "2", "--lr-decay-style", "wsd"}, "--lr-decay-style");
  usage({"--train-iters", "4", "--vocab-size", "0"}, "--vocab-size");
  usage({"--train-iters", "2", "--recompute-gelu-layers", "-2"}, "--recompute-gelu-layers");
  usage({"--train-iters", "2", "--classifier-rows", "0"}, "--classifier-rows");
#ifndef GPT_HAVE_CUDA
  CHECK_THROWS_WITH_AS(run(tiny_flags({"--train-iters", "4", "--device", "cuda"})),
                       doctest::Contains("built without CUDA"), suite::ToolError);
#endif
  try {
    run(tiny_flags({"--train-iters", "4", "--vocab-file", "/nonexistent.json"}));
    FAIL("a missing vocab file must be refused");
  } catch (const suite::ToolError& e) {
    CHECK(e.where() == "/nonexistent.json");
    CHECK(std::string(e.what()).find("vocab file not found") != std::string::npos);
  }
}

TEST_CASE("evaluation: --eval-iters 0 never evaluates; validation lines at the interval") {
  std::string log;
  run(tiny_flags({"--train-iters", "4", "--eval-iters", "0", "--eval-interval", "2"}), &log);
  CHECK(log.find("validation loss") == std::string::npos);
  auto r = run(tiny_flags({"--train-iters", "4", "--eval-iters", "1", "--eval-interval", "2"}), &log);
  CHECK(r.validation_losses.size() == 2);  // at iteration 2 and at the end
  CHECK(log.find(" validation loss at iteration 2 | lm loss value: ") != std::string::npos);
  CHECK(log.find("validation loss at the end of training for val data") != std::string::npos);
  CHECK(log.find("[Rank 0] (after 4 iterations) memory (MB) | allocated: ") != std::string::npos);
}

TEST_CASE("--profile: the profiler range covers iterations [start, end) counted from 0") {
  std::string log;
  run(tiny_flags({"--train-iters", "6", "--log-interval", "1", "--profile",
                  "--profile-step-start", "2", "--profile-step-end", "4"}),
      &log);
  const size_t started = log.find(" > profiler started before iteration 3");
  const size_t stopped = log.find(" > profiler stopped after iteration 4");
  REQUIRE(started != std::string::npos);
  REQUIRE(stopped != std::string::npos);
  // Megatron's semantics: iterations 3 and 4 (1-based in the log) inside, 2 and 5 outside.
  CHECK(log.find(" iteration        2/") < started);
  CHECK(started < log.find(" iteration        3/"));
  CHECK(log.find(" iteration        4/") < stopped);
  CHECK(stopped < log.find(" iteration        5/"));
  // A range the run does not reach the end of is closed when training ends.
  run(tiny_flags({"--train-iters", "3", "--profile", "--profile-step-start", "1"}), &log);
  CHECK(log.find(" > profiler stopped after iteration 3") != std::string::npos);
  // Not on a rank left out, and never without --profile.
  run(tiny_flags({"--train-iters", "3", "--profile", "--profile-step-start", "0",
                  "--profile-ranks", "1"}),
      &log);
  CHECK(log.find("profiler") == std::string::npos);
  run(tiny_flags({"--train-iters", "3", "--profile-step-start", "0"}), &log);
  CHECK(log.find("profiler") == std::string::npos);
  CHECK_THROWS_WITH_AS(run(tiny_flags({"--train-iters", "3", "--profile", "--profile-step-start",
                                       "4", "--profile-step-end", "4"})),
                       doctest::Contains("--profile-step-end"), suite::UsageError);
}
