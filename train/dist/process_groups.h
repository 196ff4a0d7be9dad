// The communicators of one rank's tensor-, data-, pipeline- and embedding-parallel groups
// (train/dist/parallel_layout.h), each a Communicator over its own subset of the world's ranks
// with ranks numbered within the group. Every rank creates its groups in the same order, so that
// the members of each group meet while creating it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "train/dist/communicator.h"
#include "train/dist/parallel_layout.h"

namespace gpt::dist {

class TcpStore;

struct ProcessGroups {
  std::unique_ptr<Communicator> tensor, data, pipeline, embedding;
};

// Makes the communicator of one group: `name` is unique to the group and the same on its
// members, `ranks` its global ranks in group order, `index` this rank's place in it.
using GroupFactory = std::function<std::unique_ptr<Communicator>(
    const std::string& name, const std::vector<int>& ranks, int index)>;

// `rank`'s four groups, created in the order tensor, data, pipeline, embedding.
ProcessGroups make_process_groups(const ParallelLayout& layout, int rank,
                                  const GroupFactory& make);

// "tp:0,1": the group's kind and members, for store keys and messages.
std::string group_name(const std::string& kind, const std::vector<int>& ranks);

// TCP groups meeting through the job's store (keys "tcp/<name>/..."); hosts[r] names world rank
// r in messages.
GroupFactory tcp_group_factory(TcpStore& store, const std::vector<std::string>& hosts,
                               double timeout_s);

#ifdef GPT_HAVE_NCCL
// NCCL groups: the group's first rank publishes a new unique id in the store under
// "nccl/<name>", the others read it; collectives are queued on `stream` (set_stream later).
GroupFactory nccl_group_factory(TcpStore& store, int device, double timeout_s);
#endif

}  // namespace gpt::dist
