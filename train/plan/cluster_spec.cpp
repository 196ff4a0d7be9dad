#include "train/plan/cluster_spec.h"

#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "common/cli/error.h"
#include "common/cli/numbers.h"

namespace fs = std::filesystem;

namespace plan {
namespace {

std::string at(const std::string& path, const YAML::Node& n) { return suite::location(path, n.Mark().line + 1); }

double positive_number(const YAML::Node& n, const std::string& path, const std::string& key, bool allow_zero = false) {
  if (!n.IsScalar()) throw suite::ToolError(at(path, n) + ": '" + key + "' must be a single value");
  const std::string text = n.Scalar();
  if (text == "inf" || text == ".inf") return std::numeric_limits<double>::infinity();
  const std::optional<double> v = suite::parse_number<double>(text);
  if (!v || *v < 0 || (*v == 0 && !allow_zero))
    throw suite::ToolError(at(path, n) + ": '" + key + "' must be a positive number, got '" + text + "'");
  return *v;
}

int positive_int(const YAML::Node& n, const std::string& path, const std::string& key) {
  const double v = positive_number(n, path, key);
  if (v != std::floor(v) || v > 1e6) throw suite::ToolError(at(path, n) + ": '" + key + "' must be a whole number");
  return int(v);
}

void fill(double& slot, double measured) {
  if (slot == 0 && measured > 0) slot = measured;
}

}  // namespace

int ClusterSpec::gpus() const {
  int n = 0;
  for (const NodeGroup& g : groups) n += g.gpus();
  return n;
}

bool ClusterSpec::priced() const {
  return !groups.empty() && std::all_of(groups.begin(), groups.end(), [](const NodeGroup& g) { return g.price_per_hour >= 0; });
}

std::string ClusterSpec::where(const NodeGroup& g) const { return suite::location(path, g.line); }

double ClusterSpec::between_groups_gbs(int a, int b) const {
  if (a == b) return groups[a].inter_gbs;
  if (inter_group_gbs > 0) return inter_group_gbs;
  return std::min(groups[a].inter_gbs, groups[b].inter_gbs);
}

ClusterSpec load_cluster_spec(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw suite::ToolError("--cluster " + path + ": cannot open");
  } catch (const YAML::Exception& e) {
    throw suite::ToolError(suite::location(path, e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) throw suite::ToolError(path + ": not a YAML mapping");
  ClusterSpec c;
  c.path = path;
  std::vector<std::vector<std::string>> files;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key == "inter-group-gbs") {
      c.inter_group_gbs = positive_number(kv.second, path, key);
    } else if (key == "groups") {
      if (!kv.second.IsSequence() || kv.second.size() == 0)
        throw suite::ToolError(at(path, kv.first) + ": 'groups' must be a list of node groups");
      for (const auto& gn : kv.second) {
        if (!gn.IsMap()) throw suite::ToolError(at(path, gn) + ": a node group must be a mapping");
        NodeGroup g;
        g.line = gn.Mark().line + 1;
        std::vector<std::string> gfiles;
        bool has_gpu = false, has_nodes = false, has_gpn = false;
        for (const auto& f : gn) {
          const std::string k = f.first.as<std::string>();
          const YAML::Node& v = f.second;
          if (k == "gpu") {
            if (!v.IsScalar() || v.Scalar().empty()) throw suite::ToolError(at(path, v) + ": 'gpu' must name a GPU type");
            g.gpu = v.Scalar();
            has_gpu = true;
          } else if (k == "nodes") {
            g.nodes = positive_int(v, path, k);
            has_nodes = true;
          } else if (k == "gpus-per-node") {
            g.gpus_per_node = positive_int(v, path, k);
            has_gpn = true;
          } else if (k == "memory-gib") g.memory_gib = positive_number(v, path, k);
          else if (k == "intra-node-gbs") g.intra_gbs = positive_number(v, path, k);
          else if (k == "inter-node-gbs") g.inter_gbs = positive_number(v, path, k);
          else if (k == "p2p-intra-node-gbs") g.p2p_intra_gbs = positive_number(v, path, k);
          else if (k == "p2p-inter-node-gbs") g.p2p_inter_gbs = positive_number(v, path, k);
          else if (k == "price-per-hour") g.price_per_hour = positive_number(v, path, k, true);
          else if (k == "peak-tflops") g.peak_tflops = positive_number(v, path, k);
          else if (k == "memory-bandwidth-gbs") g.memory_bandwidth_gbs = positive_number(v, path, k);
          else if (k == "bandwidth-files") {
            if (v.IsScalar()) gfiles.push_back(v.Scalar());
            else if (v.IsSequence())
              for (const auto& e : v) gfiles.push_back(e.as<std::string>());
            else throw suite::ToolError(at(path, v) + ": 'bandwidth-files' must be a file or a list of files");
          } else {
            throw suite::ToolError(at(path, f.first) + ": unknown field '" + k + "' of a node group");
          }
        }
        for (auto [name, present] : {std::pair{"gpu", has_gpu}, {"nodes", has_nodes}, {"gpus-per-node", has_gpn}})
          if (!present) throw suite::ToolError(suite::location(path, g.line) + ": node group without '" + name + "'");
        c.groups.push_back(g);
        files.push_back(gfiles);
      }
    } else {
      throw suite::ToolError(at(path, kv.first) + ": unknown field '" + key + "'");
    }
  }
  if (c.groups.empty()) throw suite::ToolError(path + ": missing field 'groups'");
  const fs::path dir = fs::path(path).parent_path();
  for (size_t i = 0; i < c.groups.size(); ++i) {
    NodeGroup& g = c.groups[i];
    for (const std::string& f : files[i]) {
      const std::string p = fs::path(f).is_absolute() || dir.empty() ? f : (dir / f).string();
      const MeasuredBandwidth m = load_bandwidth_file(p);
      if (m.inter_node()) fill(g.inter_gbs, m.all_reduce_bus_gbs);
      else fill(g.intra_gbs, m.all_reduce_bus_gbs);
      if (!m.inter_node()) {
        fill(g.intra_reduce_scatter_gbs, m.reduce_scatter_bus_gbs);
        fill(g.intra_all_gather_gbs, m.all_gather_bus_gbs);
      }
      fill(g.p2p_intra_gbs, m.p2p_intra_gbs);
      fill(g.p2p_inter_gbs, m.p2p_inter_gbs);
    }
    if (g.gpus_per_node > 1 && g.intra_gbs == 0)
      throw suite::ToolError(c.where(g) + ": group " + g.gpu + " needs intra-node-gbs or a bandwidth file measured inside a node");
    if ((g.nodes > 1 || c.groups.size() > 1) && g.inter_gbs == 0)
      throw suite::ToolError(c.where(g) + ": group " + g.gpu + " needs inter-node-gbs or a bandwidth file measured across nodes");
    if (g.gpus_per_node == 1 && g.intra_gbs == 0) g.intra_gbs = g.inter_gbs;
    fill(g.p2p_intra_gbs, g.intra_gbs);
    fill(g.intra_reduce_scatter_gbs, g.intra_gbs);
    fill(g.intra_all_gather_gbs, g.intra_gbs);
    fill(g.p2p_inter_gbs, g.inter_gbs);
    if (g.nodes == 1 && c.groups.size() == 1 && g.inter_gbs == 0) g.inter_gbs = g.p2p_inter_gbs = g.intra_gbs;
  }
  return c;
}

MeasuredBandwidth load_bandwidth_file(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(path).get(doc)) {
    if (err == simdjson::IO_ERROR) throw suite::ToolError(path, "cannot read (a bandwidth file)");
    throw suite::ToolError(path, std::string("not valid JSON: ") + simdjson::error_message(err));
  }
  std::string_view format;
  if (doc["format"].get_string().get(format) || format != "gpt-plan-bandwidth")
    throw suite::ToolError(path, "not a bandwidth file (\"format\": \"gpt-plan-bandwidth\" missing)");
  MeasuredBandwidth m;
  std::string_view comm;
  if (doc["communicator"].get_string().get(comm)) comm = "";
  m.communicator = std::string(comm);
  int64_t v = 0;
  if (doc["ranks"].get_int64().get(v) || v < 2) throw suite::ToolError(path, "\"ranks\" missing or below 2");
  m.ranks = int(v);
  if (doc["nodes"].get_int64().get(v) || v < 1) throw suite::ToolError(path, "\"nodes\" missing or below 1");
  m.nodes = int(v);
  simdjson::dom::object s;
  if (doc["summary"].get_object().get(s)) throw suite::ToolError(path, "missing object \"summary\"");
  auto read = [&](const char* key, double& out) {
    double d;
    int64_t i;
    if (!s[key].get_double().get(d)) out = d;
    else if (!s[key].get_int64().get(i)) out = double(i);
    if (out < 0 || !std::isfinite(out)) throw suite::ToolError(path, std::string("summary.") + key + " is not a bandwidth");
  };
  read("all-reduce-bus-gbs", m.all_reduce_bus_gbs);
  read("reduce-scatter-bus-gbs", m.reduce_scatter_bus_gbs);
  read("all-gather-bus-gbs", m.all_gather_bus_gbs);
  read("p2p-intra-node-gbs", m.p2p_intra_gbs);
  read("p2p-inter-node-gbs", m.p2p_inter_gbs);
  if (m.all_reduce_bus_gbs <= 0) throw suite::ToolError(path, "summary without an all-reduce bandwidth");
  return m;
}

}  // namespace plan
