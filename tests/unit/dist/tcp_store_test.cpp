// The TCP store: PyTorch's TCPStore protocol against our own server; timeouts and error lines.
#include <doctest/doctest.h>

#include <thread>

#include "common/cli/error.h"
#include "train/dist/socket_io.h"
#include "train/dist/tcp_store.h"

using gpt::dist::TcpStore;
using gpt::dist::TcpStoreServer;

TEST_CASE("store: set, get, add, check, wait, remove") {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore a("127.0.0.1", server.port(), 5, 5, "/p/");
  TcpStore b("localhost", server.port(), 5, 5, "/p/");
  a.set("k", std::string("v\0x", 3));
  CHECK(b.get("k") == std::string("v\0x", 3));
  CHECK(b.check({"k"}));
  CHECK_FALSE(b.check({"k", "missing"}));
  CHECK(a.add("n", 2) == 2);
  CHECK(b.add("n", 5) == 7);
  CHECK(a.get("n") == "7");
  // A wait that is satisfied by another client's later set.
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    a.set("late", "x");
  });
  CHECK(b.wait({"late", "k"}, 5));
  t.join();
  // A wait that times out, then the same connection still works.
  CHECK_FALSE(b.wait({"never"}, 0.2));
  CHECK(b.get("late") == "x");
  CHECK(a.remove("late"));
  CHECK_FALSE(a.remove("late"));
  CHECK_FALSE(b.check({"late"}));
  // The prefix separates namespaces.
  TcpStore other("127.0.0.1", server.port(), 5, 5, "/q/");
  CHECK_FALSE(other.check({"k"}));
}

TEST_CASE("store: get times out naming the key and the address") {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore a("127.0.0.1", server.port(), 5, 0.2);
  try {
    a.get("absent");
    FAIL("no timeout");
  } catch (const suite::ToolError& e) {
    std::string m = e.what();
    CHECK(m.find("'absent'") != std::string::npos);
    CHECK(m.find("127.0.0.1:" + std::to_string(server.port())) != std::string::npos);
  }
}

TEST_CASE("store: an unreachable address and a port in use are one-line errors") {
  int port = 0;
  {
    TcpStoreServer probe("127.0.0.1", 0);
    port = probe.port();
  }
  try {
    TcpStore a("127.0.0.1", port, 0.3, 1);
    FAIL("connected to nothing");
  } catch (const suite::ToolError& e) {
    CHECK(std::string(e.what()).rfind("cannot reach the rendezvous at 127.0.0.1:" +
                                          std::to_string(port) + " after 0.3 s", 0) == 0);
  }
  TcpStoreServer server("hostA", 0);
  try {
    TcpStoreServer again("hostA", server.port());
    FAIL("bound twice");
  } catch (const suite::ToolError& e) {
    CHECK(std::string(e.what()) ==
          "port " + std::to_string(server.port()) + " at hostA is in use");
  }
  // A listener that is not a store: the handshake's ping is never answered.
  int bound = 0;
  int fd = gpt::dist::listen_tcp(0, &bound);
  REQUIRE(fd >= 0);
  CHECK_THROWS_AS(TcpStore("127.0.0.1", bound, 0.3, 0.3), suite::ToolError);
  gpt::dist::close_fd(fd);
}

TEST_CASE("store: a client started before the server connects once it listens") {
  int port = 0;
  {
    TcpStoreServer probe("127.0.0.1", 0);
    port = probe.port();
  }
  std::unique_ptr<TcpStoreServer> server;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server = std::make_unique<TcpStoreServer>("127.0.0.1", port);
  });
  TcpStore a("127.0.0.1", port, 10, 5);
  t.join();
  a.set("x", "1");
  CHECK(a.get("x") == "1");
}

TEST_CASE("store: '/alive/' keys vanish with their connection and are listed as dead") {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore watcher("127.0.0.1", server.port(), 5, 5);
  {
    TcpStore r1("127.0.0.1", server.port(), 5, 5);
    r1.set("job/alive/1", "x");
    TcpStore r2("127.0.0.1", server.port(), 5, 5);
    r2.set("job/alive/2", "x");
    r2.remove("job/alive/2");  // a normal goodbye
    CHECK(watcher.check({"job/alive/1"}));
  }
  REQUIRE(watcher.wait({"job/dead"}, 5));
  CHECK(watcher.get("job/dead") == "1\n");
  CHECK_FALSE(watcher.check({"job/alive/1"}));
  CHECK(server.clients() == 1);
}
