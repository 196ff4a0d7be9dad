// The CUDA kernel choices as gpt-train flags (kernels/kernel_config.h, train/loop/options.cpp).
#include <doctest/doctest.h>

#include "common/cli/error.h"
#include "tests/unit/train/train_helpers.h"

using train_test::parse;
using train_test::tiny_flags;

TEST_CASE("kernel flags: the defaults are KernelConfig's") {
  const gpt::KernelConfig k = parse(tiny_flags({"--train-iters", "2"})).kernels, d;
  CHECK(k.cuda_graphs == d.cuda_graphs);
  CHECK(k.gemm_autotune == d.gemm_autotune);
  CHECK(k.sm90_gemm == d.sm90_gemm);
  CHECK(k.sm90_attention == d.sm90_attention);
  CHECK(k.flash_tiles == d.flash_tiles);
  CHECK(k.bf16_weight_grads == d.bf16_weight_grads);
  CHECK(k.gemm_tune_log == d.gemm_tune_log);
  CHECK(k.gemm_tune_burst == d.gemm_tune_burst);
  CHECK(k.gemm_candidates == d.gemm_candidates);
  CHECK(d.cuda_graphs);
  CHECK(d.sm90_gemm == gpt::Sm90GemmUse::kGelu);
}

TEST_CASE("kernel flags: each sets its choice") {
  const gpt::KernelConfig k =
      parse(
          tiny_flags({"--train-iters", "2", "--cuda-graphs", "off", "--gemm-autotune", "off",
                      "--sm90-gemm", "all", "--sm90-attention", "off", "--bf16-weight-grads", "off",
                      "--gemm-tune-log", "--gemm-tune-burst", "7", "--gemm-candidates", "32"}))
          .kernels;
  CHECK(!k.cuda_graphs);
  CHECK(!k.gemm_autotune);
  CHECK(k.sm90_gemm == gpt::Sm90GemmUse::kAll);
  CHECK(!k.sm90_attention);
  CHECK(!k.bf16_weight_grads);
  CHECK(k.gemm_tune_log);
  CHECK(k.gemm_tune_burst == 7);
  CHECK(k.gemm_candidates == 32);
  // --flash-tiles by name: every shape of the table, each to its own index.
  for (int i = 0; i < gpt::kFlashTileCount; ++i) {
    CAPTURE(gpt::kFlashTiles[i].name);
    CHECK(parse(tiny_flags({"--train-iters", "2", "--flash-tiles", gpt::kFlashTiles[i].name}))
              .kernels.flash_tiles == i);
  }
  CHECK(parse(tiny_flags({"--train-iters", "2", "--sm90-gemm", "off"})).kernels.sm90_gemm ==
        gpt::Sm90GemmUse::kNone);
  // Megatron's --cuda-graph-impl: local is on, none is off.
  CHECK(
      !parse(tiny_flags({"--train-iters", "2", "--cuda-graph-impl", "none"})).kernels.cuda_graphs);
  CHECK(
      parse(tiny_flags({"--train-iters", "2", "--cuda-graph-impl", "local"})).kernels.cuda_graphs);
}

TEST_CASE("kernel flags: a bad value is a usage error naming the flag") {
  auto usage = [](std::vector<std::string> extra, const char* needle) {
    extra.insert(extra.begin(), {"--train-iters", "2"});
    CHECK_THROWS_WITH_AS(parse(tiny_flags(extra)), doctest::Contains(needle), suite::UsageError);
  };
  usage({"--cuda-graphs", "yes"}, "--cuda-graphs");
  usage({"--cuda-graph-impl", "transformer_engine"}, "--cuda-graph-impl");
  usage({"--gemm-autotune", "1"}, "--gemm-autotune");
  usage({"--sm90-gemm", "some"}, "--sm90-gemm");
  usage({"--sm90-attention", "0"}, "--sm90-attention");
  usage({"--bf16-weight-grads", "fp32"}, "--bf16-weight-grads");
  usage({"--flash-tiles", "64x64"}, "--flash-tiles");
  usage({"--gemm-tune-burst", "0"}, "--gemm-tune-burst");
  usage({"--gemm-candidates", "65"}, "--gemm-candidates");
}
