#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "common/dataset/random_state.h"

using suite::dataset::RandomState;

TEST_CASE("RandomState(int) is MT19937 init_genrand: 10000th output for seed 5489") {
  RandomState rs(5489);
  uint32_t v = 0;
  for (int i = 0; i < 10000; ++i) v = rs.next_uint32();
  CHECK(v == 4123659995u);
}

TEST_CASE("RandomState from a key array is init_by_array (mt19937ar.out reference)") {
  const uint32_t key[] = {0x123, 0x234, 0x345, 0x456};
  RandomState rs = RandomState::from_key(key);
  const uint32_t expected[] = {1067595299u, 955945823u, 477289528u, 4107218783u, 4228976476u};
  for (uint32_t e : expected) CHECK(rs.next_uint32() == e);
}

TEST_CASE("shuffle and permutation match numpy's test_randomstate vectors") {
  std::vector<int64_t> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0};
  RandomState(1234567890).shuffle(x);
  CHECK(x == std::vector<int64_t>{0, 1, 9, 6, 2, 4, 5, 8, 7, 3});

  const std::vector<int64_t> src = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0};
  RandomState rs(1234567890);
  CHECK(rs.permutation(std::span<const int64_t>(src)) == std::vector<int64_t>{0, 1, 9, 6, 2, 4, 5, 8, 7, 3});

  // The element type does not change the draws.
  std::vector<uint32_t> y = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0};
  RandomState(1234567890).shuffle(y);
  CHECK(y == std::vector<uint32_t>{0, 1, 9, 6, 2, 4, 5, 8, 7, 3});
}

TEST_CASE("randint matches numpy: test vector and find_duplicates seeds") {
  RandomState rs(1234567890);
  CHECK(rs.randint(-99, 99, 6) == std::vector<int64_t>{31, 3, -52, 41, -48, -66});
  RandomState dup(1234);
  CHECK(dup.randint(0, 1000000, 10) ==
        std::vector<int64_t>{486191, 451283, 165158, 908341, 978124, 220532, 869016, 514041, 818831, 318129});
}

TEST_CASE("random_interval(0) and shuffles of size 0/1 draw nothing") {
  RandomState a(7), b(7);
  CHECK(a.random_interval(0) == 0);
  std::vector<int32_t> empty, one = {5};
  a.shuffle(empty);
  a.shuffle(one);
  CHECK(one == std::vector<int32_t>{5});
  CHECK(a.next_uint32() == b.next_uint32());
}

TEST_CASE("random_interval stays in range and uses masked rejection") {
  RandomState a(99), b(99);
  for (uint64_t max : {1ull, 2ull, 3ull, 5ull, 1000ull, 0xffffffffull}) {
    const uint64_t v = a.random_interval(max);
    CHECK(v <= max);
    uint64_t mask = 1;
    while (mask < max) mask = mask * 2 + 1;
    uint64_t w;
    do w = b.next_uint32() & mask;
    while (w > max);
    CHECK(v == w);
  }
}

TEST_CASE("permutation(n) shuffles arange(n) and long shuffles stay permutations") {
  RandomState rs(3);
  auto p = rs.permutation(100000);
  std::vector<bool> seen(p.size(), false);
  for (int64_t v : p) {
    REQUIRE(v >= 0);
    REQUIRE(v < 100000);
    seen[static_cast<size_t>(v)] = true;
  }
  CHECK(std::find(seen.begin(), seen.end(), false) == seen.end());
  // Block-ahead drawing must equal the plain loop.
  RandomState plain(3);
  std::vector<int64_t> q(100000);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int64_t>(i);
  for (size_t i = q.size() - 1; i >= 1; --i) std::swap(q[i], q[plain.random_interval(i)]);
  CHECK(p == q);
}
