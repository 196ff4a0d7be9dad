// Fewer points for display that keep a curve's shape: the x range is cut into equal buckets and
// each bucket keeps its first, lowest, highest and last point (in x order), so spikes and dips
// survive however long the run.
#pragma once

#include <cstddef>
#include <vector>

namespace suite::report {

struct Point {
  double x, y;
};

// `points` sorted by x. Returns them unchanged when there are at most 4 x `buckets`.
std::vector<Point> downsample_min_max(const std::vector<Point>& points, size_t buckets);

}  // namespace suite::report
