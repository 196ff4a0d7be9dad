#include "train/dist/rendezvous.h"

#include <algorithm>
#include <exception>
#include <map>

#include "common/cli/error.h"
#include "train/dist/socket_io.h"

namespace gpt::dist {
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::map<std::string, std::string> parse_config(const std::string& text) {
  std::map<std::string, std::string> m;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find('\n', i);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(i, end - i);
    size_t eq = line.find('=');
    m[line.substr(0, eq)] = eq == std::string::npos ? "" : line.substr(eq + 1);
    i = end + 1;
  }
  return m;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ", ";
    if (i == 16 && ranks.size() > 17) {
      s += "... (" + std::to_string(ranks.size()) + " in all)";
      break;
    }
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s == static_cast<long>(s) ? "%.0f" : "%.1f", s);
  return buf;
}

// The record each rank publishes: world size, local rank, host, config hash, config text.
struct Record {
  int world_size = 0, local_rank = 0;
  std::string host;
  uint64_t hash = 0;
  std::string config;
};

std::string encode(const Record& r) {
  return std::to_string(r.world_size) + "\n" + std::to_string(r.local_rank) + "\n" + r.host + "\n" +
         std::to_string(r.hash) + "\n" + r.config;
}

Record decode(const std::string& s, int rank) {
  Record r;
  size_t p = 0;
  auto field = [&]() {
    size_t e = s.find('\n', p);
    if (e == std::string::npos)
      throw suite::ToolError("rank " + std::to_string(rank) + " published a malformed record");
    std::string f = s.substr(p, e - p);
    p = e + 1;
    return f;
  };
  r.world_size = std::stoi(field());
  r.local_rank = std::stoi(field());
  r.host = field();
  r.hash = std::stoull(field());
  r.config = s.substr(p);
  return r;
}

}  // namespace

std::string config_text(const ConfigOptions& config) {
  std::string s;
  for (const auto& [k, v] : config) s += k + "=" + v + "\n";
  return s;
}

std::string config_difference(const std::string& mine, const std::string& rank0) {
  auto a = parse_config(mine), b = parse_config(rank0);
  std::string out;
  auto add = [&](const std::string& k) {
    auto ia = a.find(k), ib = b.find(k);
    std::string va = ia == a.end() ? "(unset)" : ia->second;
    std::string vb = ib == b.end() ? "(unset)" : ib->second;
    if (va == vb) return;
    if (!out.empty()) out += ", ";
    out += k + "=" + va + " (rank 0: " + vb + ")";
  };
  for (const auto& [k, v] : a) add(k);
  for (const auto& [k, v] : b)
    if (!a.count(k)) add(k);
  return out;
}

std::unique_ptr<Rendezvous> Rendezvous::join(const LaunchInfo& launch,
                                             const RendezvousOptions& opt) {
  std::unique_ptr<Rendezvous> rv(new Rendezvous());
  rv->rank_ = launch.rank;
  rv->timeout_s_ = opt.timeout_s;
  rv->store_host_ = launch.master_addr;
  rv->store_port_ = launch.master_port;
  // Keys under a prefix of ours; torchrun's restarts get fresh keys in its long-lived store.
  rv->prefix_ = "/gpt-train/attempt_" + std::to_string(launch.restart_count) + "/";
  const int n = launch.world_size;
  const std::string host = opt.host.empty() ? local_hostname() : opt.host;
  auto deadline = deadline_after(opt.timeout_s);
  auto left = [&] {
    double s = std::chrono::duration<double>(deadline - Clock::now()).count();
    return s > 0 ? s : 0.0;
  };

  if (launch.rank == 0 && !launch.agent_store)
    rv->server_ = std::make_unique<TcpStoreServer>(launch.master_addr, launch.master_port);
  try {
    rv->store_ = std::make_unique<TcpStore>(launch.master_addr, launch.master_port, opt.timeout_s,
                                            opt.timeout_s, rv->prefix_);
  } catch (const suite::ToolError& e) {
    std::string who = launch.agent_store ? "torchrun's agent serves it"
                                         : "rank 0 serves it and did not arrive";
    throw suite::ToolError(std::string(e.what()) + "; " + who);
  }
  TcpStore& store = *rv->store_;

  const std::string me = std::to_string(launch.rank);
  if (store.add("claim/" + me, 1) > 1)
    throw suite::ToolError("rank " + me + " was started twice (world size " + std::to_string(n) +
                           ")");
  Record mine;
  mine.world_size = n;
  mine.local_rank = launch.local_rank;
  mine.host = host;
  mine.config = config_text(opt.config);
  mine.hash = fnv1a(mine.config);
  if (launch.rank == 0) store.set("nccl_id", opt.nccl_id);
  store.set("rank/" + me, encode(mine));

  std::vector<std::string> keys;
  for (int r = 0; r < n; ++r) keys.push_back("rank/" + std::to_string(r));
  // Before rank 0 throws (and stops serving), it lets the ranks that are there read the store
  // so that every rank prints the same reason rather than "closed the connection".
  auto linger = [&](const std::string& what, const std::vector<int>& ranks) {
    store.set(what + "/" + me, "");
    if (!rv->server_) return;
    std::vector<std::string> k;
    for (int r : ranks) k.push_back(what + "/" + std::to_string(r));
    store.wait(k, std::min(left() + 10, 10.0));
  };
  if (!store.wait(keys, left())) {
    std::vector<int> missing, present;
    for (int r = 0; r < n; ++r) (store.check({keys[r]}) ? present : missing).push_back(r);
    linger("gave-up", present);
    throw suite::ToolError(ranks_text(missing) + " did not arrive at the rendezvous at " +
                           store.address() + " within " + seconds_text(opt.timeout_s) + " s");
  }
  std::vector<Record> all(n);
  for (int r = 0; r < n; ++r) all[r] = decode(store.get(keys[r]), r);
  rv->nccl_id_ = store.get("nccl_id");
  bool agree = true;
  for (int r = 0; r < n; ++r)
    agree = agree && all[r].world_size == n && all[r].hash == all[0].hash &&
            all[r].config == all[0].config;
  if (!agree) {
    std::vector<int> everyone;
    for (int r = 0; r < n; ++r) everyone.push_back(r);
    linger("refused", everyone);
  }
  for (int r = 0; r < n; ++r) {
    if (all[r].world_size != n)
      throw suite::ToolError("rank " + std::to_string(r) + " (host " + all[r].host +
                             ") runs with world size " + std::to_string(all[r].world_size) +
                             ", rank " + me + " with " + std::to_string(n));
    if (all[r].hash != all[0].hash || all[r].config != all[0].config) {
      throw suite::ToolError("rank " + std::to_string(r) + " (host " + all[r].host +
                             ") runs with a configuration that differs from rank 0's: " +
                             config_difference(all[r].config, all[0].config));
    }
  }
  for (const Record& r : all) {
    rv->hosts_.push_back(r.host);
    rv->local_ranks_.push_back(r.local_rank);
  }
  return rv;
}

Rendezvous::~Rendezvous() {
  store_.reset();
  if (server_ && std::uncaught_exceptions() == 0) server_->wait_for_clients_to_leave(timeout_s_);
}

void Rendezvous::linger(double timeout_s, int own) const {
  if (server_) server_->wait_for_clients_to_leave(timeout_s, own);
}

std::unique_ptr<TcpStore> Rendezvous::open_store() const {
  return std::make_unique<TcpStore>(store_host_, store_port_, timeout_s_, timeout_s_, prefix_);
}

}  // namespace gpt::dist
