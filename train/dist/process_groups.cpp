#include "train/dist/process_groups.h"

#include "train/dist/tcp_communicator.h"
#include "train/dist/tcp_store.h"
#ifdef GPT_HAVE_NCCL
#include "train/dist/nccl_communicator.h"
#endif

namespace gpt::dist {

std::string group_name(const std::string& kind, const std::vector<int>& ranks) {
  std::string s = kind + ":";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

ProcessGroups make_process_groups(const ParallelLayout& layout, int rank,
                                  const GroupFactory& make) {
  auto one = [&](const std::string& kind, const std::vector<int>& ranks) {
    int index = 0;
    while (ranks[index] != rank) ++index;
    return make(group_name(kind, ranks), ranks, index);
  };
  ProcessGroups g;
  g.tensor = one("tp", layout.tensor_group(rank));
  g.data = one("dp", layout.data_group(rank));
  g.pipeline = one("pp", layout.pipeline_group(rank));
  g.embedding = one("emb", layout.embedding_group(rank));
  return g;
}

GroupFactory tcp_group_factory(TcpStore& store, const std::vector<std::string>& hosts,
                               double timeout_s) {
  return [&store, hosts, timeout_s](const std::string& name, const std::vector<int>& ranks,
                                    int index) -> std::unique_ptr<Communicator> {
    std::vector<std::string> names;
    for (int r : ranks) names.push_back(r < int(hosts.size()) ? hosts[r] : "?");
    auto c = std::make_unique<TcpCommunicator>(store, index, int(ranks.size()), names, timeout_s,
                                               name);
    // Messages name world ranks, not group ranks.
    c->set_failure_explainer([ranks, names](int peer) {
      return "rank " + std::to_string(ranks[peer]) + " (host " + names[peer] + "): died";
    });
    return c;
  };
}

#ifdef GPT_HAVE_NCCL
GroupFactory nccl_group_factory(TcpStore& store, int device, double timeout_s) {
  return [&store, device, timeout_s](const std::string& name, const std::vector<int>& ranks,
                                     int index) -> std::unique_ptr<Communicator> {
    const std::string key = "nccl/" + name;
    std::string id;
    if (index == 0) {
      id = NcclCommunicator::make_unique_id();
      store.set(key, id);
    } else {
      id = store.get(key);
    }
    return std::make_unique<NcclCommunicator>(id, index, int(ranks.size()), device, nullptr,
                                              timeout_s, false);
  };
}
#endif

}  // namespace gpt::dist
