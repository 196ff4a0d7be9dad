// The rendezvous between ranks run as threads: the rank table, rank 0's blob, a refused
// configuration, missing ranks and an unreachable store.
#include <doctest/doctest.h>

#include "tests/unit/dist/dist_test_helpers.h"
#include "train/dist/rendezvous.h"

using namespace gpt::dist;
using dist_test::launch_of;
using dist_test::run_ranks;

TEST_CASE("rendezvous: three ranks learn each other's host and rank 0's id") {
  int port = dist_test::free_port();
  std::vector<std::vector<std::string>> hosts(3);
  std::vector<std::string> ids(3);
  auto errors = run_ranks(3, [&](int r) {
    RendezvousOptions o;
    o.timeout_s = 20;
    o.config = {{"hidden-size", "64"}, {"seed", "1234"}};
    o.host = "host" + std::to_string(r);
    if (r == 0) o.nccl_id = std::string("\0\1\2id", 5);
    auto rv = Rendezvous::join(launch_of(r, 3, port), o);
    hosts[r] = rv->hosts();
    ids[r] = rv->nccl_id();
    CHECK(rv->local_rank(2) == 2);
    auto second = rv->open_store();
    second->set("x" + std::to_string(r), "y");
    rv->store().get("x" + std::to_string((r + 1) % 3));
  });
  for (int r = 0; r < 3; ++r) {
    CHECK(errors[r] == "");
    CHECK(hosts[r] == std::vector<std::string>{"host0", "host1", "host2"});
    CHECK(ids[r] == std::string("\0\1\2id", 5));
  }
}

TEST_CASE("rendezvous: a rank with another configuration is refused, naming the option") {
  int port = dist_test::free_port();
  auto errors = run_ranks(2, [&](int r) {
    RendezvousOptions o;
    o.timeout_s = 20;
    o.host = "h" + std::to_string(r);
    o.config = {{"hidden-size", r == 1 ? "96" : "64"}, {"num-layers", "2"}};
    Rendezvous::join(launch_of(r, 2, port), o);
  });
  for (int r = 0; r < 2; ++r)
    CHECK(errors[r] == "rank 1 (host h1) runs with a configuration that differs from rank 0's: "
                       "hidden-size=96 (rank 0: 64)");
  CHECK(config_difference("a=1\nb=2\n", "a=1\nc=3\n") == "b=2 (rank 0: (unset)), c=(unset) (rank 0: 3)");
}

TEST_CASE("rendezvous: ranks that do not arrive are named with the address") {
  int port = dist_test::free_port();
  auto errors = run_ranks(2, [&](int r) {
    RendezvousOptions o;
    o.timeout_s = 1.5;
    Rendezvous::join(launch_of(r, 4, port), o);  // ranks 2 and 3 never start
  });
  std::string want = "ranks 2, 3 did not arrive at the rendezvous at 127.0.0.1:" +
                     std::to_string(port) + " within 1.5 s";
  CHECK(errors[0] == want);
  CHECK(errors[1] == want);
}

TEST_CASE("rendezvous: without rank 0 the store is unreachable, and the error says so") {
  int port = dist_test::free_port();
  RendezvousOptions o;
  o.timeout_s = 0.3;
  try {
    Rendezvous::join(launch_of(1, 2, port), o);
    FAIL("joined without rank 0");
  } catch (const std::exception& e) {
    std::string m = e.what();
    CHECK(m.rfind("cannot reach the rendezvous at 127.0.0.1:" + std::to_string(port) +
                      " after 0.3 s", 0) == 0);
    CHECK(m.find("rank 0 serves it and did not arrive") != std::string::npos);
  }
}
