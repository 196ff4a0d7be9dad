// The CUDA pass clock of the per-stage report: a pair of events on the backend's stream around
// each pass, read (and the pool reused) once per log interval.
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "kernels/cuda_common.cuh"
#include "train/loop/stage_report.h"

namespace gpt {
namespace {

class EventClock final : public PassClock {
 public:
  explicit EventClock(cudaStream_t s) : stream_(s) {}
  ~EventClock() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void begin() override {
    // The pool grows during the first interval only.
    while (events_.size() < 2 * (used_ + 1)) {
      cudaEvent_t e;
      GPT_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    GPT_CUDA_CHECK(cudaEventRecord(events_[2 * used_], stream_));
  }
  void end(bool backward) override {
    GPT_CUDA_CHECK(cudaEventRecord(events_[2 * used_ + 1], stream_));
    if (backward_.size() <= used_) backward_.resize(used_ + 1);
    backward_[used_] = backward;
    ++used_;
  }
  Totals take() override {
    Totals t;
    if (used_ == 0) return t;
    GPT_CUDA_CHECK(cudaEventSynchronize(events_[2 * used_ - 1]));
    for (size_t i = 0; i < used_; ++i) {
      float ms = 0;
      GPT_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]));
      (backward_[i] ? t.backward_ms : t.forward_ms) += ms;
      ++(backward_[i] ? t.backwards : t.forwards);
    }
    used_ = 0;
    return t;
  }

 private:
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  std::vector<bool> backward_;
  size_t used_ = 0;
};

}  // namespace

std::unique_ptr<PassClock> make_event_clock(void* stream) {
  return std::make_unique<EventClock>(static_cast<cudaStream_t>(stream));
}

}  // namespace gpt
