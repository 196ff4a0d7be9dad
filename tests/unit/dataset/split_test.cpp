#include <doctest/doctest.h>

#include "common/dataset/split.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

TEST_CASE("legacy split boundaries (spec 3.3 examples)") {
  CHECK(split_boundaries_legacy("969, 30, 1", 1000) == std::array<uint64_t, 4>{0, 969, 999, 1000});
  CHECK(split_boundaries_legacy("969,30,1", 12345) == std::array<uint64_t, 4>{0, 11963, 12333, 12345});
  CHECK(split_boundaries_legacy("90,5,5", 15) == std::array<uint64_t, 4>{0, 13, 14, 15});
  CHECK(split_boundaries_legacy("969,30,1", 10) == std::array<uint64_t, 4>{0, 10, 10, 10});
  CHECK(split_boundaries_legacy("969,30,1", 14805) == std::array<uint64_t, 4>{0, 14346, 14790, 14805});
  CHECK(split_boundaries_legacy("949/50/1", 14805) == std::array<uint64_t, 4>{0, 14050, 14790, 14805});
  CHECK(split_boundaries_legacy("100", 7) == std::array<uint64_t, 4>{0, 7, 7, 7});
  CHECK(split_range_legacy("969,30,1", 10, SplitIndex::Valid).empty());
  CHECK(split_range_legacy("969,30,1", 1000, SplitIndex::Test) == SequenceRange{999, 1000});
}

TEST_CASE("python round is half to even") {
  // 0.5 * 5 = 2.5 rounds to 2 twice: [0, 2, 4, 4], shifted by +1 -> [0, 3, 5, 5].
  // (Half away from zero would give [0, 3, 6, 6] shifted by -1 -> [0, 2, 5, 5].)
  CHECK(split_boundaries_legacy("1,1", 5) == std::array<uint64_t, 4>{0, 3, 5, 5});
}

TEST_CASE("split strings that Python float() rejects are errors naming --split") {
  for (const char* bad : {"a,b", "1,,2", "0,0,0", "1,-1", "0x10"}) {
    const std::string msg = tool_error([&] { split_boundaries_legacy(bad, 10); });
    CHECK_MESSAGE(msg.find("--split") != std::string::npos, msg);
  }
}

TEST_CASE("megatron/core cumulative split rounding (spec 3.13)") {
  auto core = split_ranges_core("969,30,1", 12345);
  CHECK(core[0].range == SequenceRange{0, 11962});
  CHECK(core[1].range == SequenceRange{11962, 12333});
  CHECK(core[2].range == SequenceRange{12333, 12345});
  auto c2 = split_ranges_core("90,5,5", 15);
  CHECK(c2[0].range == SequenceRange{0, 14});
  CHECK(c2[1].exists);
  CHECK(c2[1].range.empty());
  CHECK(c2[2].range == SequenceRange{14, 15});
  auto c3 = split_ranges_core("100,0,0", 15);
  CHECK(c3[0].exists);
  CHECK(!c3[1].exists);
  CHECK(!c3[2].exists);
}

TEST_CASE("split_range: --split-rounding picks legacy's or core's boundaries") {
  CHECK(split_range("969,30,1", 12345, SplitIndex::Train, SplitRounding::Legacy) == SequenceRange{0, 11963});
  CHECK(split_range("969,30,1", 12345, SplitIndex::Train, SplitRounding::Core) == SequenceRange{0, 11962});
  CHECK(split_range("100,0,0", 15, SplitIndex::Valid, SplitRounding::Core).empty());
  CHECK(parse_split_rounding("core") == SplitRounding::Core);
  CHECK(tool_error([] { parse_split_rounding("new"); }).find("--split-rounding must be legacy or core") != std::string::npos);
}
