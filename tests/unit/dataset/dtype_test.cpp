// common/dataset/dtype: the largest token id each token dtype holds.
#include <doctest/doctest.h>

#include "common/dataset/dtype.h"

using namespace suite::dataset;

TEST_CASE("max_token_id: the dtype's range, at most 2^32 - 1") {
  CHECK(max_token_id(DType::UInt8) == 255);
  CHECK(max_token_id(DType::Int8) == 127);
  CHECK(max_token_id(DType::Int16) == 32767);
  CHECK(max_token_id(DType::UInt16) == 65535);
  CHECK(max_token_id(DType::Int32) == 2147483647);
  CHECK(max_token_id(DType::Int64) == 4294967295ull);
}
