// Finite-difference gradient checking helpers for the training unit tests.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/random_inputs.h"

namespace gradcheck {

using random_inputs::randn;

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

// Compares analytic[i] with the central difference of loss() w.r.t. x[i] for up to `samples`
// evenly spread indices. loss() must read x. Returns the number of mismatches (also CHECKed).
inline int check(const std::string& name, std::vector<float>& x, const std::vector<float>& analytic,
                 const std::function<double()>& loss, size_t samples = 24, float h = 1e-2f,
                 double rtol = 2e-2, double atol = 2e-3) {
  REQUIRE(x.size() == analytic.size());
  int bad = 0;
  const size_t step = x.size() <= samples ? 1 : x.size() / samples;
  for (size_t i = 0; i < x.size(); i += step) {
    const float keep = x[i];
    x[i] = keep + h;
    const double lp = loss();
    x[i] = keep - h;
    const double lm = loss();
    x[i] = keep;
    const double fd = (lp - lm) / (2.0 * h);
    const double an = analytic[i];
    if (std::fabs(fd - an) > atol + rtol * std::max(std::fabs(fd), std::fabs(an))) {
      if (bad < 5) MESSAGE(name << "[" << i << "]: finite difference " << fd << " vs analytic " << an);
      ++bad;
    }
  }
  CHECK_MESSAGE(bad == 0, name << ": " << bad << " gradient mismatches");
  return bad;
}

}  // namespace gradcheck
