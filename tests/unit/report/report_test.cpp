// gpt-report's readers and thinning (the page itself is checked in a browser by
// tests/e2e/test_gpt_report.sh).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/report/downsample.h"
#include "common/report/readers.h"

using namespace suite::report;

namespace {
std::string write_temp(const std::string& name, const std::string& text) {
  const std::string dir = "/tmp/report_test." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + name, std::ios::binary) << text;
  return dir + "/" + name;
}
}  // namespace

TEST_CASE("min/max thinning keeps every bucket's extremes and bounds the count") {
  std::vector<Point> pts;
  for (int i = 0; i < 100000; ++i) pts.push_back({double(i), std::sin(i * 0.001)});
  pts[54321].y = 9;
  pts[12345].y = -9;
  auto out = downsample_min_max(pts, 100);
  CHECK(out.size() <= 400);
  CHECK(out.front().x == 0);
  CHECK(out.back().x == 99999);
  bool hi = false, lo = false;
  for (size_t i = 0; i < out.size(); ++i) {
    hi = hi || (out[i].x == 54321 && out[i].y == 9);
    lo = lo || (out[i].x == 12345 && out[i].y == -9);
    if (i) CHECK(out[i].x > out[i - 1].x);
  }
  CHECK(hi);
  CHECK(lo);
  std::vector<Point> few(pts.begin(), pts.begin() + 300);
  CHECK(downsample_min_max(few, 100).size() == 300);
}

TEST_CASE("Megatron log lines: current (timestamp, interleaved output) and legacy lines") {
  const std::string path = write_temp(
      "m.log",
      "using world size: 4, data-parallel size: 1, context-parallel size: 1, tensor-model-parallel "
      "size: 2, "
      "pipeline-model-parallel size: 2\n"
      "------------------------ arguments ------------------------\n"
      "  seq_length ...................................... 1024\n"
      "  global_batch_size ............................... 64\n"
      "-------------------- end of arguments ---------------------\n"
      " [2026-11-27 10:07:25.267573] iteration        1/      30 | consumed samples:           64 "
      "| "
      "elapsed time per iteration (ms): 3321.4 | throughput per GPU (TFLOP/s/GPU): 50.4 | learning "
      "rate: "
      "5.000000E-05 | global batch size:    64 | lm loss: 1.127391E+01 | loss scale: 1.0 | grad "
      "norm: 8.409 | "
      "number of skipped iterations:   0 | number of nan iterations:   0 "
      "|compute_activation_memory\n"
      "[Rank 1] (after 1 iterations) memory (MB) | allocated: 6868.09 | max allocated: 18240.34 | "
      "reserved: "
      "18922.00 | max reserved: 18922.00\n"
      " iteration       10/      30 | consumed samples:          640 | elapsed time per iteration "
      "(ms): 972.2 | "
      "learning rate: 8.3E-05 | global batch size:    64 | lm loss: 9.958468E+00 | loss scale: "
      "65536.0 | "
      "number of skipped iterations:   1 | number of nan iterations:   0 |\n"
      " validation loss at iteration 10 | lm loss value: 9.5E+00 | lm loss PPL: 1.3E+04 | \n"
      " iteration       20/      30 | consumed samples:         1280 | elapsed ti");
  RunData run;
  std::vector<Warning> w;
  read_text_log(path, run, w);
  REQUIRE(run.train.size() == 2);
  CHECK(run.seq_length == 1024);
  CHECK(run.get("layout T/P/D") == "2/2/1");
  CHECK(run.kind == "Megatron log");
  CHECK(run.train[0].lm_loss == doctest::Approx(11.27391));
  CHECK(run.train[0].tflops_per_gpu == doctest::Approx(50.4));
  CHECK(run.train[1].loss_scale == 65536.0);
  CHECK(std::isnan(run.train[1].grad_norm));
  REQUIRE(run.valid.size() == 1);
  CHECK(run.valid[0].iteration == 10);
  CHECK(run.ranks.at(1).max_allocated_mb == doctest::Approx(18240.34));
  REQUIRE(w.size() == 1);
  CHECK(w[0].where == path + ":10");
  CHECK(w[0].what == "truncated last line skipped");
  derive(run, 500);
  CHECK(run.train[1].tokens == 640.0 * 1024);
  CHECK(run.train[1].seconds == doctest::Approx(3.3214 + 0.9722 * 9));
  CHECK(run.train[0].mfu_percent == doctest::Approx(10.08));
  CHECK(run.valid[0].tokens == 640.0 * 1024);
}

TEST_CASE("metrics file: bad lines are warnings with their line number") {
  const std::string path =
      write_temp("bad.jsonl",
                 "{\"type\":\"config\",\"model\":{\"seq_length\":8},\"global_batch_size\":2}\n"
                 "{\"type\":\"train\",\"iteration\":1,\"lm_loss\":5,\"consumed_samples\":2}\n"
                 "not json\n"
                 "{\"type\":\"train\",\"lm_loss\":4}\n"
                 "{\"type\":\"train\",\"iteration\":2,\"lm_loss\":null,\"consumed_samples\":4}\n"
                 "{\"type\":\"validation\",\"iteration\":2,\"lm_lo");
  RunData run;
  std::vector<Warning> w;
  read_metrics_file(path, run, -1, w);
  REQUIRE(run.train.size() == 2);
  CHECK(std::isnan(run.train[1].lm_loss));
  CHECK(run.seq_length == 8);
  REQUIRE(w.size() == 3);
  CHECK(w[0].where == path + ":3");
  CHECK(w[1].where == path + ":4");
  CHECK(w[2].where == path + ":6");
  CHECK(w[2].what == "truncated last line skipped");
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("legacy lines of Megatron forks: launcher prefix, consumed tokens, samples per second") {
  const std::string path = write_temp("fork.log",
      "[default7]: iteration        2/  250000 | consumed samples:          384 | consumed tokens:"
      "       786432 | elapsed time per iteration (ms): 5350.0 | learning rate: 3.000E-07 | global "
      "batch size:   192 | lm loss: 1.119602E+01 | grad norm: 18.118 | num zeros: 0.0 | actual seq "
      "length:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples "
      "per second: 35.888 | TFLOPs: 48.77 |\n"
      "[default7]: iteration        3/  250000 | consumed samples:          576 | consumed tokens: "
      "1.2M | elapsed time per iteration (ms): 5350.0 | lm loss: 1.1E+01 |\n");
  RunData run;
  std::vector<Warning> w;
  read_text_log(path, run, w);
  CHECK(w.empty());
  REQUIRE(run.train.size() == 2);
  CHECK(run.kind == "Megatron log (legacy lines)");
  CHECK(run.seq_length == 2048);
  CHECK(run.train[0].tokens == 786432);
  CHECK(run.train[1].tokens == 1.2e6);
  CHECK(run.train[0].tokens_per_second == doctest::Approx(35.888 * 2048));
  CHECK(run.train[0].tflops_per_gpu == doctest::Approx(48.77));
  CHECK(run.train[0].batch_size == 192);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}
