#include "train/dist/watchdog.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <sstream>

#include "common/cli/error.h"
#include "train/dist/rendezvous.h"
#include "train/dist/tcp_communicator.h"
#include "train/dist/tcp_store.h"

namespace gpt::dist {
namespace {

std::atomic<bool> g_ending{false};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s == static_cast<long>(s) ? "%.0f" : "%.1f", s);
  return buf;
}

// A heartbeat: "BEATS ISSUED COMPLETED" ("done ISSUED COMPLETED" after a goodbye), then
// "gK:ISSUED" for each watched group K.
struct Beat {
  bool done = false;  // said goodbye
  uint64_t beats = 0, issued = 0, completed = 0;
  std::map<int, uint64_t> groups;
};

Beat parse_beat(const std::string& s) {
  Beat b;
  std::istringstream in(s);
  std::string first;
  in >> first;
  if (first == "done")
    b.done = true;
  else
    b.beats = std::strtoull(first.c_str(), nullptr, 10);
  in >> b.issued >> b.completed;
  std::string g;
  while (in >> g) {
    const size_t colon = g.find(':');
    if (g.size() > 1 && g[0] == 'g' && colon != std::string::npos)
      b.groups[std::atoi(g.c_str() + 1)] = std::strtoull(g.c_str() + colon + 1, nullptr, 10);
  }
  return b;
}

}  // namespace

bool watchdog_ending() { return g_ending.load(); }

void wait_for_watchdog_exit() {
  while (true) pause();
}

std::unique_ptr<Watchdog> Watchdog::start(Rendezvous& rv, Communicator* comm, WatchdogOptions opt) {
  if (!opt.before_exit) opt.before_exit = [&rv] { rv.linger(5, 2); };  // its store and ours stay open
  return std::make_unique<Watchdog>(rv.open_store(), rv.rank(), rv.hosts(), comm, std::move(opt));
}

Watchdog::Watchdog(std::unique_ptr<TcpStore> store, int rank, std::vector<std::string> hosts,
                   Communicator* comm, WatchdogOptions opt)
    : store_(std::move(store)), rank_(rank), hosts_(std::move(hosts)), comm_(comm),
      opt_(std::move(opt)) {
  if (!opt_.on_fatal) {
    std::string tool = opt_.tool;
    opt_.on_fatal = [tool](const std::string& line) {
      std::fflush(stdout);
      std::fprintf(stderr, "%s: %s\n", tool.c_str(), line.c_str());
      std::fflush(stderr);
      std::_Exit(1);
    };
  }
  store_->set("alive/" + std::to_string(rank_), hosts_.at(rank_));
  beat();
  if (comm_) {
    comm_->set_listener(this);
    if (auto* tcp = dynamic_cast<TcpCommunicator*>(comm_))
      tcp->set_failure_explainer([this](int peer) {
        std::string line = first_dead(2.0, who(peer) + ": died");
        fatal(line);
        return line;
      });
  }
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  if (std::uncaught_exceptions() == 0) {
    finish();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_thread();
}

void Watchdog::stop_thread() {
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (comm_) {
    comm_->set_listener(nullptr);
    if (auto* tcp = dynamic_cast<TcpCommunicator*>(comm_)) tcp->set_failure_explainer(nullptr);
  }
  for (auto& g : groups_)
    if (g->comm) g->comm->set_listener(nullptr);
}

void Watchdog::finish() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  stop_thread();
  if (fatal_) return;
  try {
    std::lock_guard<std::mutex> lock(mu_);
    std::string value = beat_value();
    store_->set("hb/" + std::to_string(rank_), "done" + value.substr(value.find(' ')));
    store_->remove("alive/" + std::to_string(rank_));
  } catch (const std::exception&) {
    // The store is gone already: nobody is left to tell.
  }
}

void Watchdog::note_collective(const std::string& name, uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.push_back({name, seq, std::chrono::steady_clock::now()});
  issued_ = seq;
  issued_name_ = name;
}

void Watchdog::note_done(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  while (!pending_.empty() && pending_.front().seq <= seq) pending_.pop_front();
  if (seq > done_) done_ = seq;
}

CollectiveListener* Watchdog::watch_group(Communicator* comm, int index, const std::string& label,
                                          std::vector<int> members) {
  auto g = std::make_unique<Group>();
  g->dog = this;
  g->comm = comm;
  g->index = index;
  g->label = label;
  g->members = std::move(members);
  Group* raw = g.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    groups_.push_back(std::move(g));
  }
  if (comm) comm->set_listener(raw);
  return raw;
}

void Watchdog::Group::issued(const char* name, uint64_t seq) {
  std::lock_guard<std::mutex> lock(dog->mu_);
  pending.push_back({name, seq, std::chrono::steady_clock::now()});
  issued_seq = seq;
}

void Watchdog::Group::completed(uint64_t seq) {
  std::lock_guard<std::mutex> lock(dog->mu_);
  while (!pending.empty() && pending.front().seq <= seq) pending.pop_front();
}

std::string Watchdog::who(int rank) const {
  std::string host = rank >= 0 && rank < static_cast<int>(hosts_.size()) ? hosts_[rank] : "?";
  return "rank " + std::to_string(rank) + " (host " + host + ")";
}

std::string Watchdog::beat_value() const {
  std::string value =
      std::to_string(beats_) + " " + std::to_string(issued_) + " " + std::to_string(done_);
  for (const auto& g : groups_)
    value += " g" + std::to_string(g->index) + ":" + std::to_string(g->issued_seq);
  return value;
}

void Watchdog::beat() {
  std::string value;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++beats_;
    value = beat_value();
  }
  store_->set("hb/" + std::to_string(rank_), value);
}

std::vector<std::string> Watchdog::late_ranks(const Pending& oldest, const std::vector<int>& ranks,
                                              int group, const std::string& label) {
  const std::string what = (label.empty() ? "" : label + " ") + oldest.name + " #" +
                           std::to_string(oldest.seq);
  std::vector<std::string> lines;
  for (int r : ranks) {
    if (r == rank_) continue;
    std::string key = "hb/" + std::to_string(r);
    Beat b;
    if (store_->check({key})) b = parse_beat(store_->get(key));
    const uint64_t reached = group < 0 ? b.issued : b.groups[group];
    if (reached < oldest.seq)
      lines.push_back(who(r) + ": did not reach " + what + " within " +
                      seconds_text(opt_.timeout_s) + " s");
  }
  if (lines.empty())
    lines.push_back(who(rank_) + ": " + what + " did not complete within " +
                    seconds_text(opt_.timeout_s) + " s although every rank " +
                    (group < 0 ? "" : "of the group ") + "reached it");
  return lines;
}

std::string Watchdog::first_dead(double wait_s, const std::string& fallback) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::microseconds(static_cast<int64_t>(wait_s * 1e6));
  try {
    while (true) {
      if (store_->check({"verdict"})) return store_->get("verdict");
      if (store_->check({"dead"})) return who(std::atoi(store_->get("dead").c_str())) + ": died";
      if (std::chrono::steady_clock::now() >= deadline) return fallback;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const std::exception&) {
    return fallback;
  }
}

void Watchdog::fatal(const std::string& line) {
  if (fatal_.exchange(true)) return;  // another thread of this process is ending it already
  g_ending = true;
  std::string verdict = line;
  try {
    if (store_->add("verdict-claims", 1) == 1)
      store_->set("verdict", line);
    else
      verdict = first_dead(2.0, line);
  } catch (const std::exception&) {
    // The store is gone: this rank's own line stands.
  }
  if (comm_) comm_->abort();
  std::vector<Communicator*> group_comms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& g : groups_) group_comms.push_back(g->comm);
  }
  for (Communicator* c : group_comms)
    if (c) c->abort();
  if (opt_.on_abort) opt_.on_abort();
  if (opt_.before_exit) opt_.before_exit();
  opt_.on_fatal(verdict);
}

void Watchdog::run() {
  const auto period = std::chrono::microseconds(static_cast<int64_t>(opt_.beat_s * 1e6));
  while (true) {
    {
      std::unique_lock<std::mutex> lock(stop_mu_);
      if (stop_cv_.wait_for(lock, period, [this] { return stopping_; })) return;
    }
    try {
      if (comm_) {
        comm_->poll();
        std::string broke = comm_->failure();
        if (!broke.empty()) {
          fatal(who(rank_) + ": " + broke);
          return;
        }
      }
      std::vector<Group*> groups;  // watch_group may add one meanwhile
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& g : groups_) groups.push_back(g.get());
      }
      for (Group* g : groups) {
        if (!g->comm) continue;
        g->comm->poll();
        std::string broke = g->comm->failure();
        if (!broke.empty()) {
          fatal(who(rank_) + ": " + g->label + ": " + broke);
          return;
        }
      }
      beat();
      // Another rank's watchdog decided.
      if (store_->check({"verdict"})) {
        fatal(store_->get("verdict"));
        return;
      }
      // A rank whose store connection closed without a goodbye (our store lists it).
      if (store_->check({"dead"})) {
        std::string list = store_->get("dead");
        fatal(who(std::atoi(list.c_str())) + ": died");
        return;
      }
      // The oldest collective this rank waits for, of the world or of a group, past the timeout:
      // name the ranks that never issued it.
      Pending oldest;
      const Group* late_in = nullptr;
      bool overdue = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        const auto now = std::chrono::steady_clock::now();
        auto past = [&](const std::deque<Pending>& q) {
          return !q.empty() &&
                 std::chrono::duration<double>(now - q.front().since).count() >= opt_.timeout_s;
        };
        if (past(pending_)) {
          oldest = pending_.front();
          overdue = true;
        }
        for (const auto& g : groups_)
          if (!overdue && past(g->pending)) {
            oldest = g->pending.front();
            late_in = g.get();
            overdue = true;
          }
      }
      if (!overdue) continue;
      std::vector<int> everyone(hosts_.size());
      for (size_t r = 0; r < everyone.size(); ++r) everyone[r] = int(r);
      std::vector<std::string> lines =
          late_in ? late_ranks(oldest, late_in->members, late_in->index, late_in->label)
                  : late_ranks(oldest, everyone, -1, "");
      for (size_t i = 0; i + 1 < lines.size(); ++i)
        std::fprintf(stderr, "%s: %s\n", opt_.tool.c_str(), lines[i].c_str());
      fatal(lines.back());
      return;
    } catch (const StoreTimeout& e) {
      // The store lives in rank 0's process: a stopped rank 0 stops answering.
      {
        std::lock_guard<std::mutex> lock(stop_mu_);
        if (stopping_) return;
      }
      if (!opt_.store_is_rank0 || rank_ == 0) {
        fatal(e.what());
        return;
      }
      std::string line = who(0) + ": did not answer within " + seconds_text(opt_.timeout_s) + " s";
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!pending_.empty())
          line = who(0) + ": did not reach " + pending_.front().name + " #" +
                 std::to_string(pending_.front().seq) + " within " + seconds_text(opt_.timeout_s) +
                 " s";
      }
      fatal(line);
      return;
    } catch (const suite::ToolError& e) {
      // The store itself is gone: it lives in rank 0 (or in torchrun's agent).
      {
        std::lock_guard<std::mutex> lock(stop_mu_);
        if (stopping_) return;
      }
      fatal(opt_.store_is_rank0 && rank_ != 0 ? who(0) + ": died"
                                              : std::string(e.what()));
      return;
    }
  }
}

}  // namespace gpt::dist
