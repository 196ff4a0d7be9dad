// The cluster a layout is planned for: node groups (a GPU type, how many nodes of how many GPUs,
// memory, bandwidths inside and between nodes, optionally a price), read from a YAML file with the
// launcher's YAML library, and the measured-bandwidth files `gpt-plan bandwidth` writes.
//
//   groups:
//     - gpu: A100-40GB          # a type of the --profiles, or of the built-in table with --analytic
//       nodes: 1
//       gpus-per-node: 8
//       memory-gib: 40          # optional when the profile or the table knows it
//       intra-node-gbs: 250     # all-reduce bus bandwidth inside a node, GB/s ("inf": free)
//       inter-node-gbs: 12.5    # between nodes of the group
//       p2p-intra-node-gbs: 100 # optional: point-to-point (default: the all-reduce figure)
//       p2p-inter-node-gbs: 12.5
//       bandwidth-files: [a100-node.json]   # optional: measured figures fill what is not given
//       price-per-hour: 32.77   # optional, per node
//       peak-tflops: 312        # optional: an analytic profile for a type the table lacks
//       memory-bandwidth-gbs: 1555
//   inter-group-gbs: 10         # optional: between groups (default: the slower group's inter-node)
#pragma once

#include <string>
#include <vector>

namespace plan {

struct NodeGroup {
  std::string gpu;
  int nodes = 1, gpus_per_node = 1;
  double memory_gib = 0;  // 0: from the profile or the built-in table
  double intra_gbs = 0, inter_gbs = 0, p2p_intra_gbs = 0, p2p_inter_gbs = 0;  // 0: not given
  // Inside a node, the reduce-scatter's and all-gather's own bus bandwidths (a bandwidth file's;
  // NCCL's rings run them slower than half an all-reduce); 0: the all-reduce figure.
  double intra_reduce_scatter_gbs = 0, intra_all_gather_gbs = 0;
  double price_per_hour = -1;  // per node; < 0: not given
  double peak_tflops = 0, memory_bandwidth_gbs = 0;
  int line = 0;  // where the group starts in the cluster file
  int gpus() const { return nodes * gpus_per_node; }
};

struct ClusterSpec {
  std::string path;
  std::vector<NodeGroup> groups;
  double inter_group_gbs = 0;  // 0: the slower group's inter-node figure
  int gpus() const;
  bool priced() const;  // every group has a price
  // "file:line" of a group, for messages.
  std::string where(const NodeGroup& g) const;
  // Bandwidth between two groups (or inside one) for collectives and for point-to-point.
  double between_groups_gbs(int a, int b) const;
};

// Throws suite::ToolError (a missing file, an unknown field, a malformed value, a missing
// bandwidth, a bad bandwidth file) naming the file, line and field.
ClusterSpec load_cluster_spec(const std::string& path);

// A measured-bandwidth file's figures (GB/s; 0 where it measured nothing of that kind).
struct MeasuredBandwidth {
  std::string communicator;
  int ranks = 0, nodes = 0;
  double all_reduce_bus_gbs = 0, reduce_scatter_bus_gbs = 0, all_gather_bus_gbs = 0;
  double p2p_intra_gbs = 0, p2p_inter_gbs = 0;
  bool inter_node() const { return nodes > 1; }
};
MeasuredBandwidth load_bandwidth_file(const std::string& path);

}  // namespace plan
