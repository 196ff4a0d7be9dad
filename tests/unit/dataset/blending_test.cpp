#include <doctest/doctest.h>
#include <simdjson.h>

#include "common/dataset/blending.h"
#include "common/dataset/npy.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

TEST_CASE("golden blending indices are reproduced byte for byte") {
  simdjson::dom::parser parser;
  simdjson::dom::element cases = parser.load(kGolden + "/blending/manifest.json");
  int count = 0;
  for (simdjson::dom::element c : cases.get_array()) {
    std::vector<BlendComponent> comps;
    for (simdjson::dom::element w : c["weights"].get_array()) {
      double v = w.is_int64() ? static_cast<double>(int64_t(w)) : double(w);
      comps.push_back({v, "ds" + std::to_string(comps.size())});
    }
    const auto size = static_cast<uint64_t>(int64_t(c["size"]));
    BlendPlan plan = plan_blend(comps, size);
    std::vector<double> normalized;
    for (simdjson::dom::element w : c["normalized"].get_array()) normalized.push_back(double(w));
    CHECK(plan.blend_weights == normalized);
    std::vector<uint64_t> counts;
    for (simdjson::dom::element n : c["component_train_samples"].get_array())
      counts.push_back(static_cast<uint64_t>(int64_t(n)));
    CHECK(plan.component_samples == counts);

    BlendingIndices idx = build_blending_indices(plan.blend_weights, size);
    const std::string pattern{std::string_view(c["files"])};
    const std::string base = kGolden + "/blending/" + pattern.substr(0, pattern.find('{'));
    const NpyArray di = NpyArray::from(idx.dataset_index);
    const NpyArray dsi = NpyArray::from(idx.dataset_sample_index);
    CHECK(npy_header(di.dtype, di.shape) + as_string(di.data) == read_bytes(base + "dataset_index.npy"));
    CHECK(npy_header(dsi.dtype, dsi.shape) + as_string(dsi.data) == read_bytes(base + "dataset_sample_index.npy"));
    ++count;
  }
  CHECK(count == 3);
}

TEST_CASE("Megatron-core's blend counts: ceil(ceil(N x w) x 1.005) per component, sum(ceil(N x w)) blended") {
  // Counts Megatron-core d98e8a6's BlendedMegatronDatasetBuilder gave (its dataset descriptions).
  const std::vector<BlendComponent> a = {{0.3, "docs"}, {0.7, "fortunes"}};
  BlendPlan core = plan_blend(a, 48, SplitRounding::Core);
  CHECK(core.component_samples == std::vector<uint64_t>{16, 35});
  CHECK(core.size == 49);
  BlendPlan legacy = plan_blend(a, 48, SplitRounding::Legacy);
  CHECK(legacy.component_samples == std::vector<uint64_t>{15, 34});
  const std::vector<BlendComponent> b = {{2, "docs"}, {5, "fortunes"}};
  core = plan_blend(b, 1000, SplitRounding::Core);
  CHECK(core.component_samples == std::vector<uint64_t>{288, 719});
  CHECK(core.size == 1001);
  CHECK(core.blend_weights == std::vector<double>{2.0 / 7.0, 5.0 / 7.0});
  // --mid-level-dataset-surplus 0.1 (Megatron-core's mid_level_dataset_surplus): 17 and 38.
  core = plan_blend(a, 48, SplitRounding::Core, 0.1);
  CHECK(core.component_samples == std::vector<uint64_t>{17, 38});
  CHECK(core.size == 49);
}

TEST_CASE("Megatron-core reads words as weighted pairs only when every other word is a number") {
  using W = std::vector<std::string>;
  CHECK(words_are_weighted(W{"0.3", "a", "0.7", "b"}));
  CHECK(words_are_weighted(W{"1e2", "a"}));
  CHECK_FALSE(words_are_weighted(W{"a", "b"}));
  CHECK_FALSE(words_are_weighted(W{"0.3", "a", "b"}));  // odd: all prefixes
  CHECK_FALSE(words_are_weighted(W{"a"}));
  // Without weights each component counts by its samples, normalised once; min(N, sum) blended.
  BlendPlan p = plan_sized_blend(std::vector<uint64_t>{10513, 2943}, 48);
  CHECK(p.size == 48);
  CHECK(p.blend_weights[0] == 10513.0 / 13456.0);
  CHECK(plan_sized_blend(std::vector<uint64_t>{14, 1}, 100).size == 15);
}

TEST_CASE("blending examples of spec 5.4") {
  const std::vector<double> w1 = {0.5, 0.25, 0.25};
  auto a = build_blending_indices(w1, 8);
  CHECK(a.dataset_index == std::vector<int16_t>{0, 1, 2, 0, 0, 1, 2, 0});
  CHECK(a.dataset_sample_index == std::vector<int64_t>{0, 0, 0, 1, 2, 1, 1, 3});
  const std::vector<double> w2 = {0.3, 0.7};
  auto b = build_blending_indices(w2, 10);
  CHECK(b.dataset_index == std::vector<int16_t>{1, 0, 1, 1, 0, 1, 1, 0, 1, 1});
  CHECK(b.dataset_sample_index == std::vector<int64_t>{0, 0, 1, 2, 1, 3, 4, 2, 5, 6});
}

TEST_CASE("parse_blend reads weight/prefix pairs") {
  auto c = parse_blend("0.3 /data/a_text_document  0.7 /data/b_text_document");
  REQUIRE(c.size() == 2);
  CHECK(c[0].weight == 0.3);
  CHECK(c[1].prefix == "/data/b_text_document");
  auto single = parse_blend("/data/only");
  REQUIRE(single.size() == 1);
  CHECK(single[0].prefix == "/data/only");
  CHECK(tool_error([] { parse_blend("0.3 a 0.7"); }).find("--data-path") != std::string::npos);
  CHECK(tool_error([] { parse_blend("x a 0.7 b"); }).find("'x'") != std::string::npos);
  CHECK(tool_error([] { parse_blend("0 a 0 b"); }).find("sum to 0") != std::string::npos);
}

TEST_CASE("numpy_sum uses pairwise summation from 8 values on") {
  std::vector<double> small = {0.1, 0.2, 0.3};
  CHECK(numpy_sum(small) == (0.1 + 0.2) + 0.3);
  std::vector<double> v(9);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1 * static_cast<double>(i + 1);
  double r[8];
  for (int k = 0; k < 8; ++k) r[k] = v[static_cast<size_t>(k)];
  const double pairwise = (((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))) + v[8];
  CHECK(numpy_sum(v) == pairwise);
  std::vector<double> big(300, 0.001);
  double seq = 0;
  for (double x : big) seq += x;
  CHECK(std::abs(numpy_sum(big) - seq) < 1e-12);
}
