// Process groups over the TCP communicator, 4 ranks as threads: each group's collectives reach
// only its members, numbered within the group, and a pipeline group's batched transfers pair
// neighbours that send to each other at once.
#include <doctest/doctest.h>

#include <mutex>

#include "tests/unit/dist/dist_test_helpers.h"
#include "train/dist/process_groups.h"
#include "train/dist/tcp_store.h"

using namespace gpt::dist;

namespace {

ParallelLayout layout_of(int T, int P, int world) {
  LayoutFlags f;
  f.tensor = T;
  f.pipeline = P;
  return resolve_layout(f, 4, 4, 16, 8, world);
}

}  // namespace

TEST_CASE("process groups: TCP groups of T=2 x D=2 and of P=2 x D=2 over 4 ranks") {
  for (int T : {1, 2}) {
    const ParallelLayout l = layout_of(T, 3 - T, 4);
    REQUIRE(l.data == 2);
    TcpStoreServer server("127.0.0.1", 0);
    const int port = server.port();
    std::vector<double> tp_sum(4), dp_sum(4), emb_sum(4);
    std::vector<int> tp_rank(4), dp_rank(4), pp_size(4);
    std::vector<float> got_fwd(4, -1), got_bwd(4, -1);
    auto errors = dist_test::run_ranks(4, [&](int r) {
      TcpStore store("127.0.0.1", port, 10, 10, "/t/");
      std::vector<std::string> hosts{"h0", "h1", "h2", "h3"};
      ProcessGroups g = make_process_groups(l, r, tcp_group_factory(store, hosts, 10));
      tp_rank[r] = g.tensor->rank();
      dp_rank[r] = g.data->rank();
      pp_size[r] = g.pipeline->size();
      tp_sum[r] = host_all_reduce_sum(*g.tensor, r + 1);
      dp_sum[r] = host_all_reduce_sum(*g.data, 10 * (r + 1));
      emb_sum[r] = host_all_reduce_sum(*g.embedding, 100 * (r + 1));
      if (g.pipeline->size() == 2) {
        // Both stages send and receive at once (an activation forward, a gradient back).
        float out = float(r), in = -1;
        const int peer = 1 - g.pipeline->rank();
        g.pipeline->send_recv({{true, &out, 1, DType::kF32, peer}, {false, &in, 1, DType::kF32, peer}});
        (g.pipeline->rank() == 0 ? got_bwd : got_fwd)[r] = in;
      }
    });
    for (auto& e : errors) CHECK(e == "");
    for (int r = 0; r < 4; ++r) {
      CAPTURE(T);
      CAPTURE(r);
      const RankCoord c = l.coord(r);
      CHECK(tp_rank[r] == c.tp);
      CHECK(dp_rank[r] == c.dp);
      double tp = 0, dp = 0, emb = 0;
      for (int q : l.tensor_group(r)) tp += q + 1;
      for (int q : l.data_group(r)) dp += 10 * (q + 1);
      for (int q : l.embedding_group(r)) emb += 100 * (q + 1);
      CHECK(tp_sum[r] == tp);
      CHECK(dp_sum[r] == dp);
      CHECK(emb_sum[r] == emb);
      if (l.pipeline == 2) {
        const auto pg = l.pipeline_group(r);
        const int other = pg[0] == r ? pg[1] : pg[0];
        CHECK((c.pp == 0 ? got_bwd : got_fwd)[r] == float(other));
      }
    }
  }
  CHECK(group_name("tp", {2, 3}) == "tp:2,3");
}
