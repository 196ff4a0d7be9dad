// The CUDA backend's tensor and pipeline parallelism (cuda_backend.h): the stage's ends (the
// embedding or the received activation, the output layer or the activation handed on), the
// pipeline slots, the collectives over the tensor-parallel group and the vocabulary-parallel
// cross-entropy. The layers themselves (cuda_backend.cu, cuda_backend_bf16.cu) run this rank's
// heads and FFN columns and call tp_sum where Megatron's row-parallel layers all-reduce.
//
// stage_forward and stage_backward wait for the device before they read act_in / dact_out and
// return once their work is complete (the host waits for the stream), so the executor's
// communicator may run on any stream: act_in / dact_out may be overwritten and act_out / dact_in
// read as soon as the call returns.
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/cli/error.h"
#include "kernels/kernels.cuh"
#include "kernels/vocab_parallel.cuh"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/tool_error.h"
#ifdef GPT_HAVE_NCCL
#include "train/dist/nccl_communicator.h"
#endif

namespace gpt {

void CudaBackend::init_parallel(const BackendOptions& o) {
  stage_ = o.stage;
  staged_ = !stage_.whole_model(cfg_);
  tp_ = std::max(1, stage_.tp_size);
  tp_rank_ = stage_.tp_rank;
  tp_comm_ = o.tp_comm;
  pipeline_slots_ = std::max(1, o.pipeline_slots);
  Cl_ = cfg_.hidden_size / tp_;
  NHl_ = cfg_.num_heads / tp_;
  Fl_ = cfg_.ffn_hidden_size / tp_;
  Vl_ = layout_.local_vocab();
  v0_ = layout_.vocab_begin();
  bf16_logits_ = bf16_ && Vl_ % 8 == 0;
  sp_ = stage_.sequence_parallel && tp_ > 1;
  rows_ = B_ * T_;
  if (sp_) {
    if (rows_ % tp_ != 0)
      throw suite::ToolError("--sequence-parallel: the micro-batch's " + std::to_string(rows_) +
                             " tokens do not split over --tensor-model-parallel-size " +
                             std::to_string(tp_));
    rows_ /= tp_;
    row0_ = size_t(tp_rank_) * rows_;
    for (const TensorInfo& t : layout_.tensors())
      if (layout_.grad_needs_tp_reduce(t)) {
        sp_ranges_.push_back({t.offset, t.offset + t.numel});
        sp_numel_ += t.numel;
      }
  }
  const StageSpec& ls = layout_.stage();
  if (ls.tp_size != stage_.tp_size || ls.tp_rank != tp_rank_ ||
      ls.first_layer != stage_.first_layer || layout_.num_layers() != stage_.layers(cfg_) ||
      ls.has_embedding != stage_.has_embedding || ls.has_head != stage_.has_head)
    throw std::logic_error("cuda backend: the parameter layout is not the stage's");
  if (tp_ == 1) return;
  if (!tp_comm_ || tp_comm_->size() != tp_ || tp_comm_->rank() != tp_rank_)
    throw suite::ToolError("cuda backend: tensor parallelism over " + std::to_string(tp_) +
                           " ranks needs their communicator (rank " + std::to_string(tp_rank_) +
                           ")");
  // The layers' collectives take device buffers (NCCL); TCP's read host memory.
  if (tp_comm_->kind() == "tcp")
    throw suite::ToolError("cuda backend: tensor parallelism needs the NCCL communicator, not tcp");
}

void CudaBackend::use_tp_stream() const {
#ifdef GPT_HAVE_NCCL
  // The layers' collectives are ordered between their kernels without the host in between.
  if (tp_ > 1)
    if (auto* nccl = dynamic_cast<dist::NcclCommunicator*>(tp_comm_)) nccl->set_stream(stream_);
#endif
}

std::string CudaBackend::parallel_note() const {
  if (tp_ == 1 && !staged_) return {};
  std::string n;
  if (tp_ > 1)
    n += "; tensor parallel rank " + std::to_string(tp_rank_) + " of " + std::to_string(tp_) +
         " (" + std::to_string(NHl_) + " heads" + (sp_ ? ", sequence parallel" : "") + ")";
  if (staged_)
    n += "; pipeline stage of layers [" + std::to_string(stage_.first_layer) + ", " +
         std::to_string(stage_.first_layer + layout_.num_layers()) + ")" +
         (layout_.has_wpe() ? ", embedding" : "") + (layout_.has_final_norm() ? ", loss" : "");
  if (kernels_.cuda_graphs)
    n += ": CUDA graphs off (collectives and stage boundaries inside the step)";
  return n;
}

void CudaBackend::use_slot(int s) {
  if (s < 0 || s >= pipeline_slots_)
    throw suite::ToolError("cuda backend: pipeline slot " + std::to_string(s) + " outside [0, " +
                           std::to_string(pipeline_slots_) + ")");
  const Slot& slot = slots_[size_t(s)];
  acts_ = slot.acts;
  encoded_ = slot.encoded;
  lnf_ = slot.lnf;
  lnf_mean_ = slot.lnf_mean;
  lnf_rstd_ = slot.lnf_rstd;
  inputs_ = slot.inputs;
  targets_ = slot.targets;
}

size_t CudaBackend::stage_activation_elements() const {
  return size_t(rows_) * cfg_.hidden_size;  // with sequence parallelism this rank's rows
}

dist::DType CudaBackend::stage_activation_dtype() const {
  return bf16_ ? dist::DType::kBF16 : dist::DType::kF32;
}

void* CudaBackend::stage_buffer(int which) {
  if (which < 0 || size_t(which) >= stage_buffers_.size())
    throw suite::ToolError("cuda backend: stage buffer " + std::to_string(which) + " of " +
                           std::to_string(stage_buffers_.size()) +
                           (staged_ ? "" : " (not a pipeline stage)"));
  return stage_buffers_[size_t(which)];
}

void CudaBackend::stage_input() {
  if (!act_in_)
    throw std::logic_error("a pipeline stage past the first runs through stage_forward");
  // The executor may have received it on another stream (the interleaved schedule's chunks are
  // backends with streams of their own): the device's work so far comes first.
  GPT_CUDA_CHECK(cudaDeviceSynchronize());
  const size_t n = stage_activation_elements();
  if (bf16_)
    cuda::to_fp32(encoded_, static_cast<const cuda::bf16*>(act_in_), n);
  else
    GPT_CUDA_CHECK(cudaMemcpyAsync(encoded_, act_in_, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                   stream_));
}

void CudaBackend::stage_output(const float* residual) {
  if (!act_out_)
    throw std::logic_error("a pipeline stage before the last runs through stage_forward");
  const size_t n = stage_activation_elements();
  if (bf16_)
    cuda::to_bf16(static_cast<cuda::bf16*>(act_out_), residual, n);
  else
    GPT_CUDA_CHECK(cudaMemcpyAsync(act_out_, residual, n * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::load_stage_grad() {
  if (!dact_out_)
    throw std::logic_error("a pipeline stage before the last runs through stage_backward");
  GPT_CUDA_CHECK(cudaDeviceSynchronize());  // as stage_input
  const size_t n = stage_activation_elements();
  if (bf16_) {
    cuda::to_fp32(dres_, static_cast<const cuda::bf16*>(dact_out_), n);
    GPT_CUDA_CHECK(cudaMemcpyAsync(dres_h_, dact_out_, n * sizeof(cuda::bf16),
                                   cudaMemcpyDeviceToDevice, stream_));
  } else {
    GPT_CUDA_CHECK(
        cudaMemcpyAsync(dres_, dact_out_, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  }
}

void CudaBackend::store_stage_grad() {
  if (!dact_in_)
    throw std::logic_error("a pipeline stage past the first runs through stage_backward");
  const size_t n = stage_activation_elements();
  if (bf16_)
    cuda::to_bf16(static_cast<cuda::bf16*>(dact_in_), dres_, n);
  else
    GPT_CUDA_CHECK(
        cudaMemcpyAsync(dact_in_, dres_, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::embedding_forward() {
  const int B = B_, T = T_, C = cfg_.hidden_size;
  const size_t BTC = size_t(B) * T * C;
  const float* wte = params_ + layout_.wte();
  const float* wpe = params_ + layout_.wpe();
  if (tp_ == 1) return cuda::encoder_forward(encoded_, inputs_, wte, wpe, B, T, C);
  // Vocabulary-parallel: each rank's rows (zeros for the others' tokens), the position
  // embedding from TP rank 0, summed: exactly the one-GPU embedding.
  const float* wpe0 = tp_rank_ == 0 ? wpe : nullptr;
  if (!sp_) {
    cuda::vocab_embedding_forward(encoded_, inputs_, wte, wpe0, B, T, C, v0_, Vl_);
    return tp_sum(encoded_, BTC);
  }
  cuda::Scratch<float> part(BTC);
  cuda::vocab_embedding_forward(part, inputs_, wte, wpe0, B, T, C, v0_, Vl_);
  scatter_rows(part, encoded_);  // sequence parallel: this rank's rows
}

void CudaBackend::embedding_backward(const float* dout) {
  const int B = B_, T = T_, C = cfg_.hidden_size;
  float* dwte = grads_ + layout_.wte();
  float* dwpe = grads_ + layout_.wpe();
  if (tp_ == 1) return cuda::encoder_backward(dwte, dwpe, dout, inputs_, B, T, C);
  if (!sp_) return cuda::vocab_embedding_backward(dwte, dwpe, dout, inputs_, B, T, C, v0_, Vl_);
  // Sequence parallel: every rank needs every row's gradient for its vocabulary rows; the
  // position embedding's (summed over the TP group afterwards) is TP rank 0's.
  cuda::Scratch<float> full(size_t(B) * T * C);
  GPT_CUDA_CHECK(cudaMemcpyAsync(full + row0_ * C, dout, size_t(rows_) * C * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream_));
  gather_rows(full.get());
  cuda::vocab_embedding_backward(dwte, tp_rank_ == 0 ? dwpe : nullptr, full, inputs_, B, T, C, v0_,
                                 Vl_);
}

// The collectives on activations and their gradients send the dtype the layers compute in, as
// Megatron sends its activations' dtype: bf16 under --bf16 (half the bytes of fp32), fp32
// otherwise (--fp16's range would overflow in the sums). The fp32 overloads round into bf16
// scratch and widen the result back; the bf16 paths call the bf16 overloads directly.
void CudaBackend::tp_sum(float* x, size_t n) {
  if (!bf16_) return tp_comm_->all_reduce_sum(x, n, dist::DType::kF32);
  cuda::Scratch<cuda::bf16> h(n);
  cuda::to_bf16(h, x, n);
  tp_sum(h.get(), n);
  cuda::to_fp32(x, h, n);
}

void CudaBackend::tp_sum(cuda::bf16* x, size_t n) {
  tp_comm_->all_reduce_sum(x, n, dist::DType::kBF16);
}

void CudaBackend::gather_rows(float* full) {
  const size_t C = cfg_.hidden_size, n = size_t(rows_) * C;
  if (!bf16_) return tp_comm_->all_gather(full + row0_ * C, full, n, dist::DType::kF32);
  // Every row widened from bf16, this rank's too: the ranks see the same full.
  const size_t all = size_t(B_) * T_ * C;
  cuda::Scratch<cuda::bf16> h(all);
  cuda::to_bf16(h + row0_ * C, full + row0_ * C, n);
  gather_rows(h.get());
  cuda::to_fp32(full, h, all);
}

void CudaBackend::gather_rows(cuda::bf16* full) {
  const size_t n = size_t(rows_) * cfg_.hidden_size;
  tp_comm_->all_gather(full + row0_ * cfg_.hidden_size, full, n, dist::DType::kBF16);
}

float* CudaBackend::sum_rows(float* full) {
  const size_t C = cfg_.hidden_size, all = size_t(B_) * T_ * C;
  float* mine = full + row0_ * C;
  if (bf16_) {
    cuda::Scratch<cuda::bf16> h(all);
    cuda::to_bf16(h, full, all);
    cuda::to_fp32(mine, sum_rows(h.get()), size_t(rows_) * C);
  } else if (!sp_) {
    tp_comm_->all_reduce_sum(full, all, dist::DType::kF32);
  } else {
    tp_comm_->reduce_scatter_sum(full, mine, size_t(rows_) * C, dist::DType::kF32);
  }
  return mine;
}

cuda::bf16* CudaBackend::sum_rows(cuda::bf16* full) {
  const size_t C = cfg_.hidden_size;
  cuda::bf16* mine = full + row0_ * C;
  if (!sp_)
    tp_sum(full, size_t(B_) * T_ * C);
  else
    tp_comm_->reduce_scatter_sum(full, mine, size_t(rows_) * C, dist::DType::kBF16);
  return mine;
}

void CudaBackend::scatter_rows(const float* full, float* rows) {
  const size_t C = cfg_.hidden_size, n = size_t(rows_) * C;
  if (!bf16_) return tp_comm_->reduce_scatter_sum(full, rows, n, dist::DType::kF32);
  const size_t all = size_t(B_) * T_ * C;
  cuda::Scratch<cuda::bf16> h(all);
  cuda::to_bf16(h, full, all);
  tp_comm_->reduce_scatter_sum(h, h + row0_ * C, n, dist::DType::kBF16);
  cuda::to_fp32(rows, h + row0_ * C, n);
}

void CudaBackend::layernorm_rows(float* out, float* mean, float* rstd, const float* in, size_t w,
                                 size_t b) {
  const int C = cfg_.hidden_size;
  if (!sp_)
    return cuda::layernorm_forward(out, mean, rstd, in, params_ + w, params_ + b, B_, T_, C);
  cuda::layernorm_forward(out + row0_ * C, mean, rstd, in, params_ + w, params_ + b, 1, rows_, C);
  gather_rows(out);
}

void CudaBackend::sp_hold_grads() {
  float* held = sp_grads_;
  for (const auto& [begin, end] : sp_ranges_) {
    const size_t bytes = (end - begin) * sizeof(float);
    GPT_CUDA_CHECK(cudaMemcpyAsync(held, grads_ + begin, bytes, cudaMemcpyDeviceToDevice, stream_));
    GPT_CUDA_CHECK(cudaMemsetAsync(grads_ + begin, 0, bytes, stream_));
    held += end - begin;
  }
}

void CudaBackend::sp_reduce_grads() {
  float* share = sp_grads_ + sp_numel_;
  size_t at = 0;
  for (const auto& [begin, end] : sp_ranges_) {
    GPT_CUDA_CHECK(cudaMemcpyAsync(share + at, grads_ + begin, (end - begin) * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream_));
    at += end - begin;
  }
  // Gradients, and few: summed in fp32 whatever the activations' dtype.
  tp_comm_->all_reduce_sum(share, sp_numel_, dist::DType::kF32);
  cuda::residual_forward(share, share, sp_grads_, int(sp_numel_));  // held + the group's share
  at = 0;
  for (const auto& [begin, end] : sp_ranges_) {
    GPT_CUDA_CHECK(cudaMemcpyAsync(grads_ + begin, share + at, (end - begin) * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream_));
    at += end - begin;
  }
}

void CudaBackend::cross_entropy(float* logits, int r0, int rows, bool backward, float w) {
  const int V = cfg_.vocab_size;
  float* dlogits = backward ? logits : nullptr;
  if (tp_ == 1)
    return cuda::fused_classifier(dlogits, losses_ + r0, logits, targets_ + r0, w, 1, rows, V, Vl_);
  // Three numbers per row from each rank, gathered; every rank combines them alike.
  cuda::Scratch<float> stats(size_t(rows) * 3), gathered(size_t(rows) * 3 * tp_);
  cuda::vocab_ce_stats(stats, logits, targets_ + r0, rows, Vl_, v0_, V);
  tp_comm_->all_gather(stats, gathered, size_t(rows) * 3, dist::DType::kF32);
  cuda::vocab_ce_finish(dlogits, losses_ + r0, logits, targets_ + r0, gathered, tp_, w, rows, Vl_,
                        v0_, V);
}

void CudaBackend::cross_entropy(cuda::bf16* logits, int r0, int rows, bool backward, float w) {
  const int V = cfg_.vocab_size;
  cuda::bf16* dlogits = backward ? logits : nullptr;
  if (tp_ == 1)
    return cuda::fused_classifier_bf16(dlogits, losses_ + r0, logits, targets_ + r0, w, rows, V,
                                       Vl_);
  cuda::Scratch<float> stats(size_t(rows) * 3), gathered(size_t(rows) * 3 * tp_);
  cuda::vocab_ce_stats(stats, logits, targets_ + r0, rows, Vl_, v0_, V);
  tp_comm_->all_gather(stats, gathered, size_t(rows) * 3, dist::DType::kF32);
  cuda::vocab_ce_finish(dlogits, losses_ + r0, logits, targets_ + r0, gathered, tp_, w, rows, Vl_,
                        v0_, V);
}

double CudaBackend::tp_grad_norm() {
  std::vector<std::pair<size_t, size_t>> ranges;
  cuda_tool_error([&] {
    Enter scope(*this);
    clear_stale_weight_grads();
    if (weight_grads_packed_) unpack_weight_grads();  // the sums read fp32
    return 0;
  });
  // The split tensors on every rank, the replicated ones (the same on every rank) on rank 0, a
  // last stage's tied word embedding not at all (the first stage's counts it).
  for (const TensorInfo& t : layout_.tensors())
    if (layout_.counts_in_norm(t)) ranges.push_back({t.offset, t.offset + t.numel});
  std::vector<double> sums(ranges.size());
  grad_sum_squares(ranges, sums.data());
  double local = 0.0;
  for (double s : sums) local += s;
  if (tp_ == 1) return std::sqrt(local);
  return std::sqrt(cuda_tool_error([&] { return dist::host_all_reduce_sum(*tp_comm_, local); }));
}

float CudaBackend::stage_forward(int slot, const int* inputs, const int* targets,
                                 const void* act_in, void* act_out) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    use_slot(slot);
    slots_[size_t(slot)].dropout_key = dropout_key_;  // the backward drops the same
    return stage_pass(inputs, targets, act_in, act_out, /*training=*/true);
  });
}

float CudaBackend::stage_pass(const int* inputs, const int* targets, const void* act_in,
                              void* act_out, bool training) {
  upload_tokens(layout_.has_wpe() ? inputs : nullptr, layout_.has_final_norm() ? targets : nullptr);
  act_in_ = act_in;
  act_out_ = act_out;
  forward(training);
  act_in_ = nullptr;
  act_out_ = nullptr;
  // The last stage's loss; its backward runs the output layer again (the logits exist for one
  // chunk at a time). Other stages return with act_out queued (backend.h: stream order).
  if (layout_.has_final_norm()) {
    classifier(/*backward=*/false, 0.0f);
    return finish_loss();
  }
  return 0.0f;
}

void CudaBackend::stage_backward(int slot, const void* dact_out, void* dact_in,
                                 float loss_weight) {
  cuda_tool_error([&] {
    Enter scope(*this);
    use_slot(slot);
    const uint64_t key = dropout_key_;
    dropout_key_ = slots_[size_t(slot)].dropout_key;
    training_ = true;  // a recomputed forward drops as the first did
    dact_out_ = dact_out;
    dact_in_ = dact_in;
    // As run_step: a later micro-batch adds to the first one's gradients in fp32.
    if (weight_grads_packed_) unpack_weight_grads();
    if (layout_.has_final_norm()) classifier(/*backward=*/true, loss_weight);
    if (sp_) sp_hold_grads();
    backward();
    if (sp_) {
      sp_reduce_grads();
      grads_complete_from(0);  // --overlap-grad-reduce: every gradient is final now
    }
    if (weight_grads_stale_) weight_grads_packed_ = !packed_grads_.empty();
    weight_grads_stale_ = false;
    dropout_key_ = key;
    dact_out_ = nullptr;
    dact_in_ = nullptr;
    return 0;
  });
}

float CudaBackend::stage_forward_loss(const int* inputs, const int* targets, const void* act_in,
                                      void* act_out) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    use_slot(0);  // evaluation runs between steps, when no slot holds a micro-batch
    return stage_pass(inputs, targets, act_in, act_out, /*training=*/false);
  });
}

}  // namespace gpt
