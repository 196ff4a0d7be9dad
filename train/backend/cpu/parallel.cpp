#include "train/backend/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gpt::cpu {
namespace {

// Workers sleep on a condition variable; each job is a shared chunk counter they pull from.
// A job is its own object, so a worker that wakes late can only touch the job it saw.
struct Job {
  const std::function<void(size_t, size_t)>* fn;
  size_t n, chunks;
  std::atomic<size_t> next{0};
  std::atomic<size_t> pending;
  Job(const std::function<void(size_t, size_t)>* f, size_t n_, size_t c)
      : fn(f), n(n_), chunks(c), pending(c) {}
};

class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop(); }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int n) {
    stop();
    done_ = false;
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { work(); });
  }

  void run(size_t n, size_t chunks, const std::function<void(size_t, size_t)>& fn) {
    std::lock_guard one(run_mu_);  // one job at a time
    auto job = std::make_shared<Job>(&fn, n, chunks);
    {
      std::lock_guard g(mu_);
      job_ = job;
      ++generation_;
    }
    cv_.notify_all();
    drain(*job);
    std::unique_lock g(mu_);
    done_cv_.wait(g, [&] { return job->pending.load() == 0; });
    job_.reset();
  }

 private:
  void drain(Job& job) {
    for (;;) {
      size_t c = job.next.fetch_add(1);
      if (c >= job.chunks) return;
      (*job.fn)(job.n * c / job.chunks, job.n * (c + 1) / job.chunks);
      if (job.pending.fetch_sub(1) == 1) {
        std::lock_guard g(mu_);
        done_cv_.notify_all();
      }
    }
  }

  void work() {
    unsigned long seen = 0;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock g(mu_);
        cv_.wait(g, [&] { return done_ || generation_ != seen; });
        if (done_) return;
        seen = generation_;
        job = job_;
      }
      if (job) drain(*job);
    }
  }

  void stop() {
    {
      std::lock_guard g(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  std::shared_ptr<Job> job_;
  unsigned long generation_ = 0;
  bool done_ = false;
};

int default_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

Pool& pool() {
  static Pool p(default_threads());
  return p;
}

}  // namespace

int num_threads() { return pool().size(); }
void set_num_threads(int n) { pool().resize(std::max(1, n)); }

void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t min_chunk) {
  if (n == 0) return;
  size_t threads = static_cast<size_t>(num_threads());
  size_t chunks = std::min(threads * 4, (n + min_chunk - 1) / std::max<size_t>(1, min_chunk));
  if (chunks <= 1 || threads == 1) {
    fn(0, n);
    return;
  }
  pool().run(n, chunks, fn);
}

}  // namespace gpt::cpu
