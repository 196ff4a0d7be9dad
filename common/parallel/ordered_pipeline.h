// The ordered parallel pipeline every document-transforming tool uses:
// one thread produces tasks (reads chunks), N workers transform them, and the calling thread
// consumes the results strictly in input order. At most `depth` tasks are in flight, so memory is
// bounded by depth × chunk size whatever the input size.
//
// An exception in the producer or a worker is rethrown on the calling thread when the consumer
// reaches that task, after every earlier result has been consumed, so output up to the failing
// input is complete and deterministic for any thread count.
//
// Task and Result objects live in a fixed ring of slots and are reused, so their buffers keep their
// capacity from one chunk to the next; `Result` must have clear() (called before each reuse).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace suite {

template <class Task, class Result>
class OrderedPipeline {
 public:
  using Produce = std::function<bool(Task&)>;                 // false: no more tasks
  using Work = std::function<void(const Task&, Result&)>;     // runs on a worker thread
  using MakeWorker = std::function<Work()>;                   // one per worker: per-thread state
  using Consume = std::function<void(Task&, Result&)>;        // in input order, calling thread

  static void run(int threads, const Produce& produce, const MakeWorker& make_worker, const Consume& consume) {
    if (threads <= 1) {
      run_inline(produce, make_worker, consume);
      return;
    }
    OrderedPipeline p(threads);
    p.execute(produce, make_worker, consume);
  }

 private:
  struct Slot {
    Task task;
    Result result;
    std::exception_ptr error;
    bool ready = false;
  };

  explicit OrderedPipeline(int threads) : threads_(threads), slots_(static_cast<size_t>(2 * threads + 2)) {}

  static void run_inline(const Produce& produce, const MakeWorker& make_worker, const Consume& consume) {
    Work work = make_worker();
    Task task;
    Result result;
    while (produce(task)) {
      result.clear();
      work(task, result);
      consume(task, result);
    }
  }

  void execute(const Produce& produce, const MakeWorker& make_worker, const Consume& consume) {
    std::vector<std::thread> pool;
    pool.emplace_back([&] { producer_loop(produce); });
    for (int i = 0; i < threads_; ++i) pool.emplace_back([&] { worker_loop(make_worker); });
    std::exception_ptr failure;
    try {
      consumer_loop(consume);
    } catch (...) {
      failure = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
  }

  Slot& slot(size_t i) { return slots_[i % slots_.size()]; }

  void producer_loop(const Produce& produce) {
    for (size_t i = 0;; ++i) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || i - consumed_ < slots_.size(); });
      if (stop_) return;
      lock.unlock();
      Slot& s = slot(i);
      bool more = false;
      std::exception_ptr error;
      try {
        s.result.clear();
        more = produce(s.task);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error) {
        s.error = error;
        s.ready = true;
        produced_total_ = i + 1;
        done_producing_ = true;
      } else if (!more) {
        produced_total_ = i;
        done_producing_ = true;
      } else {
        queue_.push_back(i);
      }
      cv_.notify_all();
      if (done_producing_) return;
    }
  }

  void worker_loop(const MakeWorker& make_worker) {
    Work work;
    try {
      work = make_worker();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!setup_error_) setup_error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
    for (;;) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      size_t i = queue_.front();
      queue_.erase(queue_.begin());
      lock.unlock();
      Slot& s = slot(i);
      try {
        work(s.task, s.result);
      } catch (...) {
        s.error = std::current_exception();
      }
      lock.lock();
      s.ready = true;
      cv_.notify_all();
    }
  }

  void consumer_loop(const Consume& consume) {
    for (size_t i = 0;; ++i) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return setup_error_ || slot(i).ready || (done_producing_ && i >= produced_total_); });
      if (setup_error_) std::rethrow_exception(setup_error_);
      if (!slot(i).ready) return;  // every task consumed
      lock.unlock();
      Slot& s = slot(i);
      if (s.error) std::rethrow_exception(s.error);
      consume(s.task, s.result);
      lock.lock();
      s.ready = false;
      consumed_ = i + 1;
      cv_.notify_all();
    }
  }

  int threads_;
  std::vector<Slot> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<size_t> queue_;
  size_t consumed_ = 0;
  size_t produced_total_ = 0;
  bool done_producing_ = false;
  bool stop_ = false;
  std::exception_ptr setup_error_;
};

}  // namespace suite
