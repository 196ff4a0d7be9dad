// common/parallel: results come out in input order for any thread count, and errors surface in order.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/parallel/ordered_pipeline.h"

using suite::OrderedPipeline;
using Pipeline = OrderedPipeline<int, std::string>;

namespace {
std::vector<std::string> run(int threads, int n, int fail_at = -1) {
  int next = 0;
  std::vector<std::string> out;
  Pipeline::run(
      threads, [&](int& task) { return next < n ? (task = next++, true) : false; },
      [fail_at]() -> Pipeline::Work {
        return [fail_at](const int& task, std::string& result) {
          // Uneven work so that later tasks often finish first.
          std::this_thread::sleep_for(std::chrono::microseconds((task * 7919) % 300));
          if (task == fail_at) throw std::runtime_error("task " + std::to_string(task));
          result = std::to_string(task * task);
        };
      },
      [&](int&, std::string& result) { out.push_back(result); });
  return out;
}
}  // namespace

TEST_CASE("output order is input order for 1, 2 and 7 threads") {
  std::vector<std::string> want;
  for (int i = 0; i < 500; ++i) want.push_back(std::to_string(i * i));
  CHECK(run(1, 500) == want);
  CHECK(run(2, 500) == want);
  CHECK(run(7, 500) == want);
  CHECK(run(3, 0).empty());
}

TEST_CASE("a failing task is reported after every earlier result was consumed") {
  for (int threads : {1, 4}) {
    int next = 0;
    std::vector<int> consumed;
    CHECK_THROWS_WITH(Pipeline::run(
                          threads, [&](int& t) { return next < 100 ? (t = next++, true) : false; },
                          []() -> Pipeline::Work {
                            return [](const int& t, std::string&) {
                              if (t == 37) throw std::runtime_error("bad 37");
                            };
                          },
                          [&](int& t, std::string&) { consumed.push_back(t); }),
                      "bad 37");
    REQUIRE(consumed.size() == 37);
    CHECK(consumed.back() == 36);
  }
}

TEST_CASE("a failing producer is reported in order too") {
  int next = 0;
  std::vector<int> consumed;
  CHECK_THROWS_WITH(Pipeline::run(
                        3,
                        [&](int& t) {
                          if (next == 10) throw std::runtime_error("read error");
                          t = next++;
                          return true;
                        },
                        []() -> Pipeline::Work { return [](const int&, std::string&) {}; },
                        [&](int& t, std::string&) { consumed.push_back(t); }),
                    "read error");
  CHECK(consumed.size() == 10);
}
