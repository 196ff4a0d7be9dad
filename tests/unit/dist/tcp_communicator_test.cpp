// The TCP communicator with 2 and 3 ranks as threads: sums in rank order, all_reduce equal to
// reduce_scatter + all_gather bit for bit, every dtype, point to point, and a dead peer named.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "tests/unit/dist/dist_test_helpers.h"
#include "train/dist/tcp_communicator.h"

using namespace gpt::dist;

namespace {

// Runs body(comm) on `world` ranks meeting through one store.
std::vector<std::string> with_comms(int world, const std::function<void(TcpCommunicator&)>& body) {
  TcpStoreServer server("127.0.0.1", 0);
  int port = server.port();
  return dist_test::run_ranks(world, [&](int r) {
    TcpStore store("127.0.0.1", port, 10, 10, "/t/");
    std::vector<std::string> hosts;
    for (int i = 0; i < world; ++i) hosts.push_back("h" + std::to_string(i));
    TcpCommunicator comm(store, r, world, hosts, 10);
    body(comm);
  });
}

std::vector<float> values(int rank, size_t n) {
  std::mt19937 g(1000 + rank);
  std::uniform_real_distribution<float> d(-1e3f, 1e3f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g) * (rank + 1) / 7.0f;
  return v;
}

}  // namespace

TEST_CASE("tcp communicator: fp32 sums in rank order, all_reduce == reduce_scatter + all_gather") {
  for (int world : {2, 3}) {
    const size_t chunk = 1001;  // all_reduce of chunk·world; also an odd length below
    std::vector<std::vector<float>> ar(world), rsag(world), odd(world);
    auto errors = with_comms(world, [&](TcpCommunicator& c) {
      int r = c.rank();
      auto in = values(r, chunk * world);
      ar[r] = in;
      c.all_reduce_sum(ar[r].data(), ar[r].size(), DType::kF32);
      std::vector<float> mine(chunk);
      c.reduce_scatter_sum(in.data(), mine.data(), chunk, DType::kF32);
      rsag[r].resize(chunk * world);
      c.all_gather(mine.data(), rsag[r].data(), chunk, DType::kF32);
      odd[r] = values(r, 7);
      c.all_reduce_sum(odd[r].data(), 7, DType::kF32);
      CHECK(c.seq() == 4);
    });
    for (auto& e : errors) CHECK(e == "");
    std::vector<std::vector<float>> in(world);
    for (int r = 0; r < world; ++r) in[r] = values(r, chunk * world);
    for (int r = 0; r < world; ++r) {
      CHECK(std::memcmp(ar[r].data(), rsag[r].data(), ar[r].size() * 4) == 0);
      CHECK(std::memcmp(ar[r].data(), ar[0].data(), ar[r].size() * 4) == 0);
      CHECK(std::memcmp(odd[r].data(), odd[0].data(), 7 * 4) == 0);
    }
    bool in_order = true;
    for (size_t k = 0; k < chunk * world; ++k) {
      float s = in[0][k];
      for (int r = 1; r < world; ++r) s += in[r][k];
      in_order = in_order && std::memcmp(&s, &ar[0][k], 4) == 0;
    }
    CHECK(in_order);
  }
}

TEST_CASE("tcp communicator: bf16, fp64, int64, broadcast, send/recv, host reductions") {
  auto errors = with_comms(3, [&](TcpCommunicator& c) {
    int r = c.rank();
    // bf16: 1.0 + 2^-8 + 2^-8 rounds once (fp32 accumulation) to 1.0078125, not twice to 1.0.
    std::vector<uint16_t> b(6, r == 0 ? 0x3f80 : 0x3b80);  // 1.0 and 2^-8
    std::vector<uint16_t> b2 = b, part(2);
    c.all_reduce_sum(b.data(), 6, DType::kBF16);
    CHECK(b[5] == 0x3f81);
    c.reduce_scatter_sum(b2.data(), part.data(), 2, DType::kBF16);
    CHECK(part[0] == 0x3f81);
    std::vector<double> d{r * 0.5, 1e300};
    c.all_reduce_sum(d.data(), 2, DType::kF64);
    CHECK(d[0] == 1.5);
    std::vector<int64_t> i{int64_t(1) << 40, -r};
    c.all_reduce_sum(i.data(), 2, DType::kI64);
    CHECK(i[0] == 3 * (int64_t(1) << 40));
    CHECK(i[1] == -3);
    std::vector<float> bc(5, float(r));
    c.broadcast(bc.data(), 5, DType::kF32, 2);
    CHECK(bc[4] == 2.0f);
    if (r == 0) {
      float x[3] = {1, 2, 3};
      c.send(x, 3, DType::kF32, 2);
    } else if (r == 2) {
      float y[3] = {};
      c.recv(y, 3, DType::kF32, 0);
      CHECK(y[2] == 3.0f);
    }
    CHECK(host_all_reduce_max(c, r == 1 ? 7.0 : -1.0) == 7.0);
    CHECK(host_all_reduce_sum(c, r + 0.25) == 3.75);
    // all_gather in place: in == out + rank·n.
    std::vector<int64_t> g(6, -1);
    g[2 * r] = r;
    g[2 * r + 1] = 10 + r;
    c.all_gather(g.data() + 2 * r, g.data(), 2, DType::kI64);
    CHECK(g == std::vector<int64_t>{0, 10, 1, 11, 2, 12});
  });
  for (auto& e : errors) CHECK(e == "");
}

TEST_CASE("tcp communicator: a peer that goes away is named; mismatched collectives fail") {
  auto errors = with_comms(3, [&](TcpCommunicator& c) {
    float x[4] = {1, 2, 3, 4};
    c.all_reduce_sum(x, 4, DType::kF32);
    if (c.rank() == 1) return;  // its connections close when the communicator is destroyed
    c.all_reduce_sum(x, 4, DType::kF32);
  });
  CHECK(errors[1] == "");
  // A survivor may see the other survivor leave first (it stops at its own failure): the
  // watchdog's list of dead ranks names the first one; the communicator alone names the
  // connection that closed. The first to fail saw rank 1 go, so one of them names it.
  CHECK((errors[0] == "rank 1 (host h1): died" || errors[0] == "rank 2 (host h2): died"));
  CHECK((errors[2] == "rank 1 (host h1): died" || errors[2] == "rank 0 (host h0): died"));
  CHECK((errors[0] == "rank 1 (host h1): died" || errors[2] == "rank 1 (host h1): died"));
  auto mismatch = with_comms(2, [&](TcpCommunicator& c) {
    float x[4] = {1, 2, 3, 4};
    c.all_reduce_sum(x, c.rank() == 0 ? 4 : 2, DType::kF32);
  });
  CHECK((mismatch[0] + mismatch[1]).find("the ranks issue different collectives") !=
        std::string::npos);
}
