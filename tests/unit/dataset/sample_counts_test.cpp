#include <doctest/doctest.h>

#include "common/dataset/sample_counts.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

TEST_CASE("requested sample counts follow megatron/training.py") {
  TrainingSchedule s;
  s.train_iters = 500000;
  s.global_batch_size = 256;
  auto c = requested_sample_counts(s);  // defaults: eval interval 1000, eval iters 100
  CHECK(c.train == 128000000);
  CHECK(c.valid == (500000 / 1000 + 1) * 100 * 256);
  CHECK(c.test == 100 * 256);
  s.train_samples = 12345;
  s.eval_iters = 0;
  c = requested_sample_counts(s);
  CHECK(c.train == 12345);
  CHECK(c.valid == 0);
  CHECK(c.test == 0);
  s.eval_interval = 0;
  CHECK(tool_error([&] { requested_sample_counts(s); }).find("--eval-interval") != std::string::npos);
  s.eval_interval = 1;
  s.global_batch_size = 0;
  CHECK(tool_error([&] { requested_sample_counts(s); }).find("--global-batch-size") != std::string::npos);
}
