#include "common/report/downsample.h"

#include <algorithm>

namespace suite::report {

std::vector<Point> downsample_min_max(const std::vector<Point>& points, size_t buckets) {
  if (points.size() <= 4 * buckets || buckets == 0) return points;
  const double x0 = points.front().x, x1 = points.back().x;
  const double width = (x1 - x0) / double(buckets);
  std::vector<Point> out;
  out.reserve(4 * buckets + 4);
  size_t i = 0;
  while (i < points.size()) {
    size_t b = width > 0 ? size_t((points[i].x - x0) / width) : 0;
    b = std::min(b, buckets - 1);
    const double end = x0 + width * double(b + 1);
    size_t j = i, lo = i, hi = i;
    while (j < points.size() && (b == buckets - 1 || points[j].x < end)) {
      if (points[j].y < points[lo].y) lo = j;
      if (points[j].y > points[hi].y) hi = j;
      ++j;
    }
    if (j == i) j = i + 1;  // a point at the bucket's very end (rounding)
    size_t keep[4] = {i, std::min(lo, hi), std::max(lo, hi), j - 1};
    for (int k = 0; k < 4; ++k)
      if (k == 0 || keep[k] != keep[k - 1]) out.push_back(points[keep[k]]);
    i = j;
  }
  return out;
}

}  // namespace suite::report
