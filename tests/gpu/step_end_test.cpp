// The end of a data-parallel step decided on the device (kernels/step_end.cu:
// decide_step_from_sums) against the host's decision (train/loop/data_parallel.h), which it
// replaces where the backend can: the same loss, norm, factor and flag, bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/step_end.cuh"
#include "tests/gpu/gpu_test_util.h"
#include "train/loop/data_parallel.h"

using namespace gputest;
namespace cu = gpt::cuda;

namespace {

template <class T>
bool bits_equal(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace

TEST_CASE("data parallelism's step decision on the device has the host's bits") {
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::vector<double> sums;  // [0] the ranks' loss sum, then the sums of squares
    int data_parallel;
    float clip;
    double loss_scale;
  };
  const Case cases[] = {
      {{21.734, 0.1, 0.2, 1e-7, 3.3, 0.0, 0.0, 0.7}, 2, 1.0f, 1.0},      // clipped
      {{43.1, 1e-4, 2e-5, 3e-6, 4e-7}, 4, 1.0f, 1.0},                    // not clipped
      {{10.9, 0.25, 0.5}, 3, 0.0f, 1.0},                                 // no clipping
      {{65536.0 * 11.0, 4e12, 1e11}, 2, 1.0f, 65536.0},                  // fp16 loss scale
      {{21.0, 0.1, inf}, 2, 1.0f, 1.0},                                  // overflow: skipped
      {{std::nan(""), 0.1, 0.2}, 2, 1.0f, 1.0},                          // nan loss: skipped
  };
  Dev<cu::StepDecision> out(1);
  for (const Case& c : cases) {
    Dev<double> sums(c.sums);
    cu::decide_step_from_sums(out, sums, int(c.sums.size()), 1, c.data_parallel, c.clip,
                              c.loss_scale);
    const cu::StepDecision d = out.download()[0];
    double sq = 0;
    for (size_t i = 1; i < c.sums.size(); ++i) sq += c.sums[i];
    const gpt::Backend::StepEnd e =
        gpt::step_decision(c.sums[0], sq, c.data_parallel, c.loss_scale);
    CHECK(bits_equal(d.loss, e.loss));
    CHECK(bits_equal(d.norm, e.norm));
    CHECK((d.update != 0) == e.updated);
    if (e.updated) CHECK(bits_equal(d.grad_scale, gpt::step_grad_scale(e, c.clip, c.loss_scale)));
  }
}
