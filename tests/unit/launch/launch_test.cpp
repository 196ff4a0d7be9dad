// gpt-launch's library (train/launch/): presets and overrides, layout checks, the generated command,
// the log parsing of `status`, the training-time formula and the memory estimate.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "common/cli/error.h"
#include "train/launch/config.h"
#include "train/launch/estimate.h"
#include "train/launch/job.h"
#include "train/launch/memory.h"
#include "train/launch/status.h"

namespace {

launch::Preset preset(std::string tp = "1", std::string pp = "1") {
  launch::Preset p;
  p.name = "test";
  p.train = {{"num-layers", "12"}, {"hidden-size", "768"}, {"num-attention-heads", "12"}, {"seq-length", "1024"},
             {"micro-batch-size", "16"}, {"global-batch-size", "512"}, {"tensor-model-parallel-size", tp},
             {"pipeline-model-parallel-size", pp}, {"bf16", "true"}, {"save", "false"}};
  return p;
}

}  // namespace

TEST_CASE("overrides: by gpt-train flag name only") {
  launch::Preset p = preset();
  launch::apply_override(p, "train-iters=2000");
  launch::apply_override(p, "--lr=1e-4");
  launch::apply_override(p, "micro-batch-size=8");
  CHECK(p.get("train-iters") == "2000");
  CHECK(p.get("lr") == "1e-4");
  CHECK(p.get("micro-batch-size") == "8");
  CHECK_THROWS_AS(launch::apply_override(p, "num-layer=3"), suite::UsageError);
  CHECK_THROWS_AS(launch::apply_override(p, "lr"), suite::UsageError);
}

TEST_CASE("preset numbers: the whole value, or an error naming the file and key") {
  launch::Preset p = preset();
  p.path = "presets/test.yaml";
  p.train.push_back({"hidden-dropout", "0.05"});
  CHECK(p.get_int("num-layers", 0) == 12);
  CHECK(p.get_int("ffn-hidden-size", 3072) == 3072);
  CHECK(p.get_real("hidden-dropout", 0.1) == 0.05);
  CHECK(p.get_real("attention-dropout", 0.1) == 0.1);
  launch::apply_override(p, "num-layers=12abc");
  launch::apply_override(p, "hidden-dropout=0.1x");
  CHECK_THROWS_WITH_AS(p.get_int("num-layers", 0),
                       "presets/test.yaml: num-layers must be an integer, got '12abc'", suite::UsageError);
  CHECK_THROWS_WITH_AS(p.get_real("hidden-dropout", 0.1),
                       "presets/test.yaml: hidden-dropout must be a number, got '0.1x'", suite::UsageError);
}

TEST_CASE("layout: T x P must divide the GPUs, the global batch micro-batch x D") {
  launch::Layout l = launch::make_layout(preset("2", "2"), {{"", 2}}, 8);
  CHECK(l.world == 16);
  CHECK(l.dp == 4);
  CHECK_THROWS_WITH_AS(launch::make_layout(preset("4", "8"), {{"", 2}}, 8),
                       doctest::Contains("tensor 4 x pipeline 8 = 32 GPUs per model copy does not divide 2 nodes x 8 GPUs = 16"),
                       suite::UsageError);
  CHECK_THROWS_WITH_AS(launch::make_layout(preset(), {{"", 3}}, 8),
                       doctest::Contains("global batch 512 is not a multiple of micro-batch 16 x data-parallel size 24"),
                       suite::UsageError);
  launch::Layout het = launch::make_layout(preset(), {{"h100", 1}, {"a100", 1}}, 8);
  CHECK(het.world == 16);
  CHECK(het.components.size() == 2);
}

TEST_CASE("the command: flags in preset order, true bare, false left out, mock data without a data path") {
  launch::JobSpec s;
  s.preset = preset();
  s.gpt_train = "/bin/gpt-train";
  s.mock_data = true;
  std::string cmd = launch::shell_join(launch::train_argv(s));
  CHECK(cmd.starts_with("/bin/gpt-train --device cuda --num-layers 12 --hidden-size 768"));
  CHECK(cmd.find("--bf16 ") != std::string::npos);
  CHECK(cmd.find("--save") == std::string::npos);
  CHECK(cmd.ends_with("--mock-data --vocab-size 50257"));
  CHECK(launch::shell_join({"a b", "it's", "x=1"}) == "'a b' 'it'\\''s' x=1");
}

TEST_CASE("status: iteration lines and error lines, warnings left out") {
  launch::IterationLine it;
  REQUIRE(launch::parse_iteration_line(
      " iteration       12/     100 | consumed samples:           48 | elapsed time per iteration (ms): 42.4 | "
      "learning rate: 6.0E-05 | global batch size:     4 | lm loss: 6.246974E+00 | tokens per second: 3022.0 |",
      it));
  CHECK(it.iteration == 12);
  CHECK(it.total == 100);
  CHECK(it.ms == doctest::Approx(42.4));
  CHECK(it.tokens_per_s == doctest::Approx(3022.0));
  CHECK(it.loss == doctest::Approx(6.246974));
  CHECK_FALSE(launch::parse_iteration_line("[Rank 0] (after 1 iterations) memory (MB)", it));
  CHECK(launch::is_error_line("gpt-train: data.idx: cannot open"));
  CHECK(launch::is_error_line("RuntimeError: CUDA error: an illegal memory access was encountered"));
  CHECK(launch::is_error_line("srun: error: n01: task 3: Exited with exit code 1"));
  CHECK_FALSE(launch::is_error_line("/x/torch/cuda.py:12: UserWarning: no CUDA error handler"));
  CHECK_FALSE(launch::is_error_line("  warnings.warn(\"error handling is deprecated\")"));
  CHECK_FALSE(launch::is_error_line(" iteration 1/ 10 | lm loss: 6.2 |"));
}

TEST_CASE("estimate: the Megatron formula") {
  CHECK(launch::training_days(300e9, 175e9, 1024, 140, true) == doctest::Approx(33.9).epsilon(0.002));
  CHECK(launch::training_days(300e9, 175e9, 1024, 140, false) == doctest::Approx(33.9 * 6 / 8).epsilon(0.002));
  // GPT-3 175B: 96 layers of 12288, padded vocabulary 51200, sequence 2048 -> 174.6e9 parameters
  CHECK(launch::gpt_parameters(96, 12288, 51200, 2048) == doctest::Approx(174.6e9).epsilon(0.001));
  auto path = std::filesystem::temp_directory_path() / "launch_test_metrics.jsonl";
  std::ofstream(path) << "{\"type\":\"train\",\"tflops\":10}\n{\"type\":\"train\",\"tflops\":100}\n"
                      << "{\"type\":\"train\",\"tflops\":120}\n";
  int n = 0;
  CHECK(launch::measured_tflops(path.string(), n) == doctest::Approx(110));
  CHECK(n == 2);
  std::filesystem::remove(path);
}

TEST_CASE("memory: the buffer plan's kinds; the distributed optimizer divides by D, recomputation shrinks activations") {
  launch::MemoryEstimate m = launch::estimate_memory(preset(), 1, 1, 4);
  const double n = double(m.stage_parameters);
  CHECK(n == doctest::Approx(124.4e6).epsilon(0.01));  // GPT-2 124M with the padded vocabulary
  CHECK(m.gradients == doctest::Approx(4 * n));
  CHECK(m.optimizer == doctest::Approx(8 * n).epsilon(0.01));  // AdamW moments, fp32
  CHECK(m.optimizer_distributed == doctest::Approx(m.optimizer / 4));
  // The bf16 copy, the matmul weights' low halves (12 layers of 12·768²), the other tensors in
  // fp32 and 4 pages of 2 MiB per layer.
  const double matmul = 12.0 * 12 * 768 * 768;
  CHECK(m.weights == doctest::Approx(2 * n + 2 * matmul + 4 * (n - matmul) + 12 * 4 * (2 << 20)));
  // The sharded fp32 master: bf16 copy + a quarter of the fp32 + the rest of the fp32 that the
  // bf16 compute reads (the embeddings, ~39M of 124M, dominate it).
  CHECK(m.weights_distributed < m.weights);
  CHECK(m.weights_distributed > 2 * n + 4 * n / 4);
  CHECK(m.activations_recompute < m.activations / 3);
  // One micro-batch per step on one GPU: the low halves live in the gradient buffer.
  launch::Preset one = preset();
  one.set("global-batch-size", "16");
  CHECK(launch::estimate_memory(one, 1, 1, 1).weights == doctest::Approx(m.weights - 2 * matmul));
  launch::MemoryEstimate t2 = launch::estimate_memory(preset("2"), 2, 1, 2);
  CHECK(t2.weights < m.weights);
}
