#include "train/dist/watchdog.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
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

struct Beat {
  bool done = false;  // said goodbye
  uint64_t beats = 0, issued = 0, completed = 0;
};

Beat parse_beat(const std::string& s) {
  Beat b;
  std::istringstream in(s);
  std::string first;
  in >> first;
  if (first == "done") {
    b.done = true;
    in >> b.issued >> b.completed;
    return b;
  }
  b.beats = std::strtoull(first.c_str(), nullptr, 10);
  in >> b.issued >> b.completed;
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
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (comm_) {
    comm_->set_listener(nullptr);
    if (auto* tcp = dynamic_cast<TcpCommunicator*>(comm_)) tcp->set_failure_explainer(nullptr);
  }
}

void Watchdog::finish() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (comm_) {
    comm_->set_listener(nullptr);
    if (auto* tcp = dynamic_cast<TcpCommunicator*>(comm_)) tcp->set_failure_explainer(nullptr);
  }
  if (fatal_) return;
  try {
    std::lock_guard<std::mutex> lock(mu_);
    store_->set("hb/" + std::to_string(rank_),
                "done " + std::to_string(issued_) + " " + std::to_string(done_));
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

std::string Watchdog::who(int rank) const {
  std::string host = rank >= 0 && rank < static_cast<int>(hosts_.size()) ? hosts_[rank] : "?";
  return "rank " + std::to_string(rank) + " (host " + host + ")";
}

void Watchdog::beat() {
  std::string value;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++beats_;
    value = std::to_string(beats_) + " " + std::to_string(issued_) + " " + std::to_string(done_);
  }
  store_->set("hb/" + std::to_string(rank_), value);
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
      Pending oldest;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (pending_.empty()) continue;
        oldest = pending_.front();
      }
      double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - oldest.since).count();
      if (waited < opt_.timeout_s) continue;
      // This rank waited too long: name the ranks that never issued the collective.
      std::vector<std::string> lines;
      for (int r = 0; r < static_cast<int>(hosts_.size()); ++r) {
        if (r == rank_) continue;
        std::string key = "hb/" + std::to_string(r);
        Beat b;
        if (store_->check({key})) b = parse_beat(store_->get(key));
        if (b.issued < oldest.seq)
          lines.push_back(who(r) + ": did not reach " + oldest.name + " #" +
                          std::to_string(oldest.seq) + " within " + seconds_text(opt_.timeout_s) +
                          " s");
      }
      if (lines.empty())
        lines.push_back(who(rank_) + ": " + oldest.name + " #" + std::to_string(oldest.seq) +
                        " did not complete within " + seconds_text(opt_.timeout_s) +
                        " s although every rank reached it");
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
