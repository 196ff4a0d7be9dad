// common/cli/numbers.h: a number is the whole text or nothing, for every reader of numbers.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "common/cli/numbers.h"

using suite::parse_number;

TEST_CASE("parse_number: integers, whole text only") {
  CHECK(parse_number<int>("42") == 42);
  CHECK(parse_number<int>("+7") == 7);
  CHECK(parse_number<long>("-3") == -3);
  CHECK(parse_number<int>("") == std::nullopt);
  CHECK(parse_number<int>(" 4") == std::nullopt);
  CHECK(parse_number<int>("4 ") == std::nullopt);
  CHECK(parse_number<int>("12abc") == std::nullopt);  // std::stoi would say 12
  CHECK(parse_number<int>("1.5") == std::nullopt);
  CHECK(parse_number<int>("1e3") == std::nullopt);
  CHECK(parse_number<int>("99999999999") == std::nullopt);  // past int
  CHECK(parse_number<unsigned>("-1") == std::nullopt);        // never wrapped
  CHECK(parse_number<unsigned long long>("18446744073709551615") == 18446744073709551615ull);
}

TEST_CASE("parse_number: reals, finite and whole text only") {
  CHECK(parse_number<double>("0.25") == 0.25);
  CHECK(parse_number<double>("1e-4") == 1e-4);
  CHECK(parse_number<double>("-2") == -2.0);
  CHECK(parse_number<double>("3.") == 3.0);
  CHECK(parse_number<double>("") == std::nullopt);
  CHECK(parse_number<double>("0.1x") == std::nullopt);
  CHECK(parse_number<double>(" 0.1") == std::nullopt);
  CHECK(parse_number<double>("inf") == std::nullopt);
  CHECK(parse_number<double>("nan") == std::nullopt);
  CHECK(parse_number<double>("1e999") == std::nullopt);
}

TEST_CASE("parse_number<float>: one rounding from the decimal, as std::stof") {
  for (const char* text : {"0.02", "0.1", "1e-4", "3.4028234e38", "16777217"})
    CHECK(parse_number<float>(text) == std::stof(text));
  CHECK(parse_number<float>("1e39") == std::nullopt);  // past float
}
