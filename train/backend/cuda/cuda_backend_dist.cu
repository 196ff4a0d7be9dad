// The CUDA backend's data-parallel hooks (backend.h): device buffers and the backend's stream for
// the NCCL communicator, the norm over shard ranges and the sharded AdamW.
//
// The gradients reach the communicator in fp32 and complete: prepare_grads_for_reduce zeroes the
// weight gradients left stale by zero_grad (no micro-batch wrote them yet) and widens the ones
// the first micro-batch packed into bf16 (pack_weight_grads_). Widening keeps the values a
// one-GPU run updates with (its packed gradients are already rounded to bf16), so data
// parallelism changes the sum only, not the rounding; reducing the packed halves in place instead
// would mix bf16 and fp32 words in one bucket.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "kernels/kernels.cuh"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/tool_error.h"

namespace gpt {

std::string select_cuda_device(int local_rank, int local_world_size, int* device_out) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw suite::ToolError("--device cuda: no CUDA device is visible (check the driver and "
                           "CUDA_VISIBLE_DEVICES)");
  // One visible device: the launcher bound it to this task (Slurm's --gpus-per-task, or
  // CUDA_VISIBLE_DEVICES per rank). Several: one per local rank.
  const int device = count == 1 ? 0 : local_rank;
  if (device >= count)
    throw suite::ToolError("local rank " + std::to_string(local_rank) + " of " +
                           std::to_string(local_world_size) + " has no GPU: " +
                           std::to_string(count) + " visible on this host (more ranks than GPUs; "
                           "start one process per GPU)");
  char bus[32] = {0};
  if (cudaSetDevice(device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess)
    throw suite::ToolError("--device cuda: cannot use GPU " + std::to_string(device));
  *device_out = device;
  return bus;
}

Backend::FlatBuffers CudaBackend::flat_buffers() {
  FlatBuffers b;
  b.params = params_;
  b.grads = grads_;
  b.on_device = true;
  b.stream = stream_;
  return b;
}

double CudaBackend::take_step_loss() {
  if (queued_micro_batches_ == 0) return Backend::take_step_loss();
  return cuda_tool_error([&] {
    Enter scope(*this);
    queued_micro_batches_ = 0;
    double loss = 0;
    GPT_CUDA_CHECK(cudaMemcpyAsync(&loss, step_sums_, sizeof(double), cudaMemcpyDeviceToHost,
                                   stream_));
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return loss;
  });
}

void CudaBackend::prepare_grads_for_reduce() {
  cuda_tool_error([&] {
    Enter scope(*this);
    clear_stale_weight_grads();
    if (weight_grads_packed_) unpack_weight_grads();
    // The communicator's stream reads them next.
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return 0;
  });
}

const CudaBackend::DpSpans& CudaBackend::dp_spans(size_t begin, size_t end, bool compact) {
  auto [it, fresh] = dp_spans_.try_emplace({begin, end, compact});
  if (!fresh) return it->second;
  // The range cut at the tensors (their weight decay) and into AdamW's spans; with compact, the
  // offsets are those of the moments, shard_.compact(begin, end) + (i - begin).
  std::vector<std::pair<size_t, size_t>> pieces;
  std::vector<bool> decays;
  const size_t shift = compact ? begin - shard_.compact(begin, end) : 0;
  for (const TensorInfo& t : layout_.tensors()) {
    const size_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.numel);
    if (lo >= hi) continue;
    pieces.push_back({lo - shift, hi - shift});
    decays.push_back(t.decays());
  }
  if (end > layout_.total() && !compact) {  // the padding (zeros) counts in the norm's ranges
    pieces.push_back({std::max(begin, layout_.total()), end});
    decays.push_back(false);
  }
  const std::vector<cuda::AdamWSpan> spans = cuda::adamw_spans(pieces, decays);
  DpSpans& d = it->second;
  d.n = int(spans.size());
  void* p = nullptr;
  GPT_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(1, spans.size()) * sizeof(spans[0])));
  allocations_.push_back(p);
  d.dev = static_cast<cuda::AdamWSpan*>(p);
  GPT_CUDA_CHECK(cudaMemcpy(d.dev, spans.data(), spans.size() * sizeof(spans[0]),
                            cudaMemcpyHostToDevice));
  return d;
}

double CudaBackend::grad_sum_squares(size_t begin, size_t end) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    if (end <= begin) return 0.0;
    // The range cut into AdamW's spans: the one-GPU norm's kernel, one block per span.
    const DpSpans& sp = dp_spans(begin, end, false);
    return cuda::sum_squares_spans(grads_, sp.dev, sp.n);
  });
}

void CudaBackend::queue_range_sums(const std::vector<std::pair<size_t, size_t>>& ranges,
                                   const std::vector<size_t>& slots, size_t n) {
  if (dp_sums_capacity_ < n) {
    void* p = nullptr;
    GPT_CUDA_CHECK(cudaMalloc(&p, n * sizeof(double)));
    allocations_.push_back(p);
    dp_sums_ = static_cast<double*>(p);
    dp_sums_capacity_ = n;
  }
  GPT_CUDA_CHECK(cudaMemsetAsync(dp_sums_, 0, n * sizeof(double), stream_));
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].second <= ranges[i].first) continue;
    const DpSpans& sp = dp_spans(ranges[i].first, ranges[i].second, false);
    cuda::sum_squares_spans_to_device(dp_sums_ + slots[i], grads_, sp.dev, sp.n);
  }
}

void CudaBackend::grad_sum_squares(const std::vector<std::pair<size_t, size_t>>& ranges,
                                   double* out) {
  cuda_tool_error([&] {
    Enter scope(*this);
    if (ranges.empty()) return 0;
    std::vector<size_t> slots(ranges.size());
    for (size_t i = 0; i < slots.size(); ++i) slots[i] = i;
    queue_range_sums(ranges, slots, ranges.size());
    GPT_CUDA_CHECK(cudaMemcpyAsync(out, dp_sums_, ranges.size() * sizeof(double),
                                   cudaMemcpyDeviceToHost, stream_));
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return 0;
  });
}

double* CudaBackend::queue_step_sums(const std::vector<std::pair<size_t, size_t>>& ranges,
                                     const std::vector<size_t>& slots, size_t n,
                                     const double* head, size_t n_head) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    queue_range_sums(ranges, slots, n);
    queued_micro_batches_ = 0;
    GPT_CUDA_CHECK(cudaMemcpyAsync(dp_sums_, step_sums_, sizeof(double),
                                   cudaMemcpyDeviceToDevice, stream_));
    if (n_head > 0) {
      if (dp_head_capacity_ < n_head) {
        if (dp_head_host_) GPT_CUDA_CHECK(cudaFreeHost(dp_head_host_));
        dp_head_host_ = nullptr;
        GPT_CUDA_CHECK(cudaMallocHost(&dp_head_host_, n_head * sizeof(double)));
        dp_head_capacity_ = n_head;
      }
      // The previous step's read is done (read_step_decision waited for it).
      std::copy(head, head + n_head, dp_head_host_);
      GPT_CUDA_CHECK(cudaMemcpyAsync(dp_sums_ + 1, dp_head_host_, n_head * sizeof(double),
                                     cudaMemcpyHostToDevice, stream_));
    }
    return dp_sums_;
  });
}

void CudaBackend::queue_step_decision(const double* sums, size_t n, size_t first_square,
                                      int data_parallel, float clip_grad, double loss_scale) {
  cuda_tool_error([&] {
    Enter scope(*this);
    cuda::decide_step_from_sums(step_decision_, sums, int(n), int(first_square), data_parallel,
                                clip_grad, loss_scale);
    GPT_CUDA_CHECK(cudaMemcpyAsync(step_host_, step_decision_, sizeof(cuda::StepDecision),
                                   cudaMemcpyDeviceToHost, stream_));
    if (first_square > 1)
      GPT_CUDA_CHECK(cudaMemcpyAsync(dp_head_host_, sums + 1, (first_square - 1) * sizeof(double),
                                     cudaMemcpyDeviceToHost, stream_));
    GPT_CUDA_CHECK(cudaEventRecord(step_decided_, stream_));
    return 0;
  });
}

Backend::StepEnd CudaBackend::read_step_decision(double* head, size_t n_head) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    GPT_CUDA_CHECK(cudaEventSynchronize(step_decided_));
    std::copy(dp_head_host_, dp_head_host_ + n_head, head);
    StepEnd e;
    e.loss = step_host_->loss;
    e.norm = step_host_->norm;
    e.updated = step_host_->update != 0;
    return e;
  });
}

void CudaBackend::queue_adamw_range(const AdamWConfig& c, float lr, int step, float grad_scale,
                                    bool decided, size_t begin, size_t end) {
  end = std::min(end, layout_.total());
  if (end <= begin) return;
  // One launch for the range. Its spans index the compact moments; the parameters and
  // gradients are read through pointers moved by the same amount (a multiple of 4 elements,
  // BucketPlan's pieces, so the 16-byte accesses stay aligned).
  const size_t shift = begin - shard_.compact(begin, end);
  if (shift % 4 != 0) throw std::logic_error("optimizer shard not 4-element aligned");
  const DpSpans& sp = dp_spans(begin, end, true);
  cuda::adamw_update_spans(params_ + shift, grads_ + shift, m_, v_, sp.dev, sp.n, lr, c.beta1,
                           c.beta2, c.eps, c.weight_decay, step, grad_scale,
                           params_h_ ? params_h_ + shift : nullptr,
                           decided ? &step_decision_->grad_scale : nullptr,
                           decided ? &step_decision_->update : nullptr);
  if (fp16_) cuda::to_fp16(params_hf_ + begin, params_ + begin, end - begin);
}

void CudaBackend::adamw_range(const AdamWConfig& c, float lr, int step, float grad_scale,
                              size_t begin, size_t end) {
  cuda_tool_error([&] {
    Enter scope(*this);
    queue_adamw_range(c, lr, step, grad_scale, false, begin, end);
    return 0;
  });
}

void CudaBackend::adamw_range_decided(const AdamWConfig& c, float lr, int step, size_t begin,
                                      size_t end) {
  cuda_tool_error([&] {
    Enter scope(*this);
    queue_adamw_range(c, lr, step, 1.0f, true, begin, end);
    return 0;
  });
}

void CudaBackend::set_optimizer_shard(const float* m, const float* v) {
  cuda_tool_error([&] {
    Enter scope(*this);
    shard_.each([&](size_t lo, size_t hi, size_t at) {
      hi = std::min(hi, layout_.total());
      if (lo >= hi) return;
      GPT_CUDA_CHECK(cudaMemcpyAsync(m_ + at, m + lo, (hi - lo) * sizeof(float),
                                     cudaMemcpyHostToDevice, stream_));
      GPT_CUDA_CHECK(cudaMemcpyAsync(v_ + at, v + lo, (hi - lo) * sizeof(float),
                                     cudaMemcpyHostToDevice, stream_));
    });
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return 0;
  });
}

void CudaBackend::get_optimizer_shard(float* m, float* v) const {
  cuda_tool_error([&] {
    Enter scope(*this);
    std::fill(m, m + layout_.total(), 0.0f);
    std::fill(v, v + layout_.total(), 0.0f);
    shard_.each([&](size_t lo, size_t hi, size_t at) {
      hi = std::min(hi, layout_.total());
      if (lo >= hi) return;
      GPT_CUDA_CHECK(cudaMemcpyAsync(m + lo, m_ + at, (hi - lo) * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_));
      GPT_CUDA_CHECK(cudaMemcpyAsync(v + lo, v_ + at, (hi - lo) * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_));
    });
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return 0;
  });
}

void CudaBackend::params_changed() {
  if (shards_master()) return;  // the gather wrote the bf16 copy (params_from_staging)
  cuda_tool_error([&] {
    Enter scope(*this);
    refresh_half_params();
    return 0;
  });
}

void* CudaBackend::grads_to_bf16(size_t begin, size_t end, size_t capacity) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    if (dp_bf16_capacity_ < capacity) {
      void* p = nullptr;
      if (cudaMalloc(&p, capacity * sizeof(cuda::bf16)) != cudaSuccess)
        throw suite::ToolError("cuda backend: out of device memory for the bf16 gradient "
                               "reduction (" + std::to_string(capacity >> 19) + " MiB)");
      allocations_.push_back(p);  // freed with the others (an older, smaller one too)
      allocated_bytes_ += capacity * sizeof(cuda::bf16);
      dp_bf16_ = static_cast<cuda::bf16*>(p);
      dp_bf16_capacity_ = capacity;
    }
    cuda::to_bf16(dp_bf16_, grads_ + begin, end - begin);
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return static_cast<void*>(dp_bf16_);
  });
}

void CudaBackend::grads_from_bf16(const void* scratch, size_t begin, size_t end) {
  cuda_tool_error([&] {
    Enter scope(*this);
    cuda::to_fp32(grads_ + begin, static_cast<const cuda::bf16*>(scratch), end - begin);
    return 0;
  });
}

}  // namespace gpt

// ---- Overlapped data parallelism: a second stream, ordered against the compute stream by events.
namespace gpt {

CudaBackend::CommStream::~CommStream() {
  if (stream) cudaStreamSynchronize(stream);
  for (cudaEvent_t e : marks) cudaEventDestroy(e);
  if (compute_done) cudaEventDestroy(compute_done);
  if (comm_done) cudaEventDestroy(comm_done);
  if (stream) cudaStreamDestroy(stream);
}

void* CudaBackend::comm_stream() {
  return cuda_tool_error([&] {
    if (!comm_.stream) {
      Enter scope(*this);
      // The highest priority: NCCL's kernels get SMs as soon as the backward's kernels free them.
      int least = 0, greatest = 0;
      GPT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      GPT_CUDA_CHECK(cudaStreamCreateWithPriority(&comm_.stream, cudaStreamNonBlocking, greatest));
      GPT_CUDA_CHECK(cudaEventCreateWithFlags(&comm_.compute_done, cudaEventDisableTiming));
      GPT_CUDA_CHECK(cudaEventCreateWithFlags(&comm_.comm_done, cudaEventDisableTiming));
    }
    return static_cast<void*>(comm_.stream);
  });
}

void CudaBackend::comm_waits_for_compute() {
  cuda_tool_error([&] {
    comm_stream();
    Enter scope(*this);
    GPT_CUDA_CHECK(cudaEventRecord(comm_.compute_done, stream_));
    GPT_CUDA_CHECK(cudaStreamWaitEvent(comm_.stream, comm_.compute_done, 0));
    return 0;
  });
}

void CudaBackend::compute_waits_for_comm() {
  cuda_tool_error([&] {
    if (!comm_.stream) return 0;
    Enter scope(*this);
    GPT_CUDA_CHECK(cudaEventRecord(comm_.comm_done, comm_.stream));
    GPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, comm_.comm_done, 0));
    return 0;
  });
}

void CudaBackend::mark_comm(size_t i) {
  cuda_tool_error([&] {
    comm_stream();
    Enter scope(*this);
    while (comm_.marks.size() <= i) {
      cudaEvent_t e = nullptr;
      GPT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      comm_.marks.push_back(e);
    }
    GPT_CUDA_CHECK(cudaEventRecord(comm_.marks[i], comm_.stream));
    return 0;
  });
}

void CudaBackend::compute_waits_for_mark(size_t i) {
  cuda_tool_error([&] {
    if (i >= comm_.marks.size()) throw std::logic_error("a communication mark never recorded");
    Enter scope(*this);
    GPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, comm_.marks[i], 0));
    return 0;
  });
}

void CudaBackend::params_changed_on_comm(size_t begin, size_t end) {
  if (shards_master()) return;
  cuda_tool_error([&] {
    comm_stream();
    Enter scope(*this);
    end = std::min(end, layout_.total());
    if (end <= begin) return 0;
    // The bucket's half-precision copy on the communication stream, right after its all-gather.
    cuda::set_stream(comm_.stream);
    if (bf16_) cuda::to_bf16(params_h_ + begin, params_ + begin, end - begin);
    if (fp16_) cuda::to_fp16(params_hf_ + begin, params_ + begin, end - begin);
    return 0;  // Enter restores the caller's stream
  });
}

void CudaBackend::sync_comm() const {
  if (comm_.stream) GPT_CUDA_CHECK(cudaStreamSynchronize(comm_.stream));
}

void CudaBackend::grads_complete_from(size_t begin) {
  if (!reduce_in_backward_) return;
  // This micro-batch wrote the layers' weight gradients packed in bf16 (the first after
  // zero_grad): the reduction reads fp32, so the tensors of the completed range are widened here,
  // in the backward (prepare_grads_for_reduce's work, range by range). Queued on the compute
  // stream before the event that the communication stream waits for.
  if (weight_grads_stale_ && !packed_grads_.empty()) {
    for (const auto& [lo, hi] : packed_grads_) {
      if (lo < begin || lo >= packed_from_) continue;
      const size_t n = hi - lo;
      cuda::Scratch<cuda::bf16> packed(n);
      GPT_CUDA_CHECK(cudaMemcpyAsync(packed, grads_ + lo, n * sizeof(cuda::bf16),
                                     cudaMemcpyDeviceToDevice, stream_));
      cuda::to_fp32(grads_ + lo, packed, n);
    }
    packed_from_ = begin;
  }
  Backend::grads_complete_from(begin);
}

}  // namespace gpt
