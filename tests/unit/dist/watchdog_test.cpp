// The watchdog names a rank that died (connection closed without a goodbye), a rank that did not
// reach a collective within the timeout, and rank 0 when its store goes away; a normal end is
// silent.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "tests/unit/dist/dist_test_helpers.h"
#include "train/dist/socket_io.h"
#include "train/dist/watchdog.h"

using namespace gpt::dist;

namespace {

struct Fatals {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(l);
    };
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return lines.size();
  }
};

const std::vector<std::string> kHosts{"h0", "h1", "h2"};

std::unique_ptr<Watchdog> make(int port, int rank, Fatals& f, double timeout_s) {
  WatchdogOptions o;
  o.timeout_s = timeout_s;
  o.beat_s = 0.05;
  o.on_fatal = f.sink();
  return std::make_unique<Watchdog>(std::make_unique<TcpStore>("127.0.0.1", port, 5, 5, "/w/"),
                                    rank, kHosts, nullptr, o);
}

void wait_for(Fatals& f, size_t n) {
  for (int i = 0; i < 200 && f.count() < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

TEST_CASE("watchdog: a rank that dies is named by the others") {
  TcpStoreServer server("127.0.0.1", 0);
  Fatals f;
  auto w0 = make(server.port(), 0, f, 60);
  auto w1 = make(server.port(), 1, f, 60);
  try {
    auto w2 = make(server.port(), 2, f, 60);
    throw std::runtime_error("rank 2 fails");  // unwinding: no goodbye
  } catch (const std::runtime_error&) {
  }
  wait_for(f, 2);
  REQUIRE(f.count() == 2);
  CHECK(f.lines[0] == "rank 2 (host h2): died");
  CHECK(f.lines[1] == "rank 2 (host h2): died");
  CHECK(w0->first_dead(0.1, "none") == "rank 2 (host h2): died");
}

TEST_CASE("watchdog: a rank that does not reach a collective is named as late") {
  TcpStoreServer server("127.0.0.1", 0);
  Fatals f;
  auto w0 = make(server.port(), 0, f, 1);
  auto w1 = make(server.port(), 1, f, 1);
  auto w2 = make(server.port(), 2, f, 1);
  for (auto* w : {w0.get(), w1.get(), w2.get()}) {
    w->note_collective("all_reduce", 1);
    w->note_done(1);
  }
  w0->note_collective("all_reduce", 2);
  w2->note_collective("all_reduce", 2);  // rank 1 is still computing
  // Ranks 0 and 2 decide; the first publishes the verdict, and every rank (rank 1 too, which is
  // alive but behind) ends with it.
  wait_for(f, 3);
  REQUIRE(f.count() == 3);
  for (const auto& line : f.lines)
    CHECK(line == "rank 1 (host h1): did not reach all_reduce #2 within 1 s");
}

TEST_CASE("watchdog: a rank that does not reach a group's collective is named among the group") {
  // Tensor-parallel groups {0, 1} and {2}: the groups number their collectives apart from the
  // world's, and only the group's members are compared.
  TcpStoreServer server("127.0.0.1", 0);
  Fatals f;
  auto w0 = make(server.port(), 0, f, 1);
  auto w1 = make(server.port(), 1, f, 1);
  auto w2 = make(server.port(), 2, f, 1);
  CollectiveListener* g0 = w0->watch_group(nullptr, 0, "tensor-parallel group", {0, 1});
  CollectiveListener* g1 = w1->watch_group(nullptr, 0, "tensor-parallel group", {0, 1});
  w2->watch_group(nullptr, 0, "tensor-parallel group", {2});
  for (auto* w : {w0.get(), w1.get(), w2.get()}) {
    w->note_collective("all_reduce", 1);
    w->note_done(1);
  }
  for (auto* g : {g0, g1}) {
    g->issued("all_reduce", 1);
    g->completed(1);
  }
  g0->issued("all_reduce", 2);  // rank 1 is stopped before its second one
  wait_for(f, 3);
  REQUIRE(f.count() == 3);
  for (const auto& line : f.lines)
    CHECK(line == "rank 1 (host h1): did not reach tensor-parallel group all_reduce #2 within 1 s");
}

TEST_CASE("watchdog: a normal end is silent; a lost store means rank 0 died") {
  Fatals f;
  {
    auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0);
    auto w0 = make(server->port(), 0, f, 60);
    auto w1 = make(server->port(), 1, f, 60);
    w0->note_collective("broadcast", 1);
    w0->note_done(1);
    w1->finish();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(f.count() == 0);
    CHECK(w0->first_dead(0.05, "none") == "none");
    auto w2 = make(server->port(), 2, f, 60);
    server.reset();  // rank 0's store disappears
    wait_for(f, 2);
    w0->finish();
  }
  // Rank 2 names rank 0; rank 0 itself (in this test it has no peers to blame) names the store.
  REQUIRE(f.count() == 2);
  CHECK(std::count(f.lines.begin(), f.lines.end(), "rank 0 (host h0): died") == 1);
}

TEST_CASE("watchdog: a store that stops answering (rank 0 stopped) names rank 0 as late") {
  // A store that answers the handshake and then nothing, as a stopped rank 0's would.
  int port = 0;
  int lfd = gpt::dist::listen_tcp(0, &port);
  REQUIRE(lfd >= 0);
  std::atomic<bool> done{false};
  std::thread stalled([&] {
    int c = gpt::dist::accept_tcp(lfd);
    char hello[10];
    if (c >= 0 && gpt::dist::recv_all(c, hello, 10, gpt::dist::deadline_after(5)))
      gpt::dist::send_all(c, hello + 6, 4);  // the ping's nonce back
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gpt::dist::close_fd(c);
  });
  Fatals f;
  WatchdogOptions o;
  o.timeout_s = 0.3;
  o.beat_s = 0.05;
  o.on_fatal = f.sink();
  {
    Watchdog w(std::make_unique<TcpStore>("127.0.0.1", port, 5, 0.3, "/w/"), 1, kHosts, nullptr,
               o);
    w.note_collective("all_gather", 7);
    wait_for(f, 1);
    REQUIRE(f.count() == 1);
    CHECK(f.lines[0] == "rank 0 (host h0): did not reach all_gather #7 within 0.3 s");
  }
  done = true;
  stalled.join();
  gpt::dist::close_fd(lfd);
}
