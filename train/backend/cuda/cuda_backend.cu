#include "train/backend/cuda/cuda_backend.h"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/cli/error.h"
#include "kernels/dropout_mask.h"
#include "kernels/kernels.cuh"
#include "train/backend/cuda/tool_error.h"

namespace gpt {
namespace {

constexpr size_t kNoBias = ~size_t(0);

}  // namespace

BufferPlanOptions CudaBackend::plan_options(const BackendOptions& o) const {
  BufferPlanOptions p;
  p.micro_batch = o.micro_batch;
  p.bf16 = o.bf16;
  p.fp16 = o.fp16;
  p.recompute_activations = o.recompute_activations;
  p.recompute_gelu_layers = o.recompute_gelu_layers;
  p.classifier_rows = o.classifier_rows;
  p.hidden_dropout = o.hidden_dropout;
  p.flash_attention = flash_;
  p.pack_weight_grads = o.kernels.bf16_weight_grads;
  p.split_master = split_master_;
  p.lo_in_grads = lo_in_grads_;
  p.flat_padding = o.flat_padding;
  p.optimizer_elements = shard_.size();
  p.stage = o.stage;
  p.slots = pipeline_slots_;
  p.stage_buffers = staged_ ? stage_buffer_count() : 0;
  return p;
}

void CudaBackend::allocate(const BufferPlan& plan, const BufferPlanOptions& options) {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) free_bytes = 0;
  const std::vector<size_t> offsets = carve_offsets(plan);
  buffers_.assign(plan.buffers.size(), nullptr);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlannedBuffer& b = plan.buffers[i];
    // The distributed optimizer's sharded fp32 master, or the fp32 beside split masters (whole
    // when the driver cannot map pages).
    if (b.name == "params" && want_sparse_ && (!split_master_ || can_map_sparse())) {
      buffers_[i] = map_sparse_params(b.bytes);
      continue;
    }
    const size_t bytes = b.name == "params" && split_master_
                             ? (layout_.total() + flat_padding_) * sizeof(float)
                             : b.bytes;
    if (!b.lives_in.empty()) {
      const auto room = std::find_if(plan.buffers.begin(), plan.buffers.end(),
                                     [&](const PlannedBuffer& r) { return r.name == b.lives_in; });
      buffers_[i] = static_cast<char*>(buffers_[room - plan.buffers.begin()]) + offsets[i];
      continue;
    }
    if (cudaMalloc(&buffers_[i], bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      throw suite::ToolError(out_of_memory_message(plan, free_bytes, b.name, options));
    }
    allocations_.push_back(buffers_[i]);
    allocated_bytes_ += bytes;
  }
}

void* CudaBackend::buffer_ptr(const std::string& name) const {
  for (size_t i = 0; i < plan_.buffers.size(); ++i)
    if (plan_.buffers[i].name == name) return buffers_[i];
  return nullptr;
}

CudaBackend::MatIn CudaBackend::matin(const std::string& name) const {
  MatIn m;
  if (bf16_)
    m.h = buffer<cuda::bf16>(name);
  else if (fp16_)
    m.hf = buffer<cuda::fp16>(name);
  else
    m.f = buffer<float>(name);
  return m;
}

CudaBackend::LayerActs CudaBackend::layer_acts(const std::string& prefix, int l,
                                               int gelu_recomputed) const {
  const std::string s = prefix + "layer" + std::to_string(l) + ".";
  LayerActs a;
  a.ln1 = matin(s + "ln1");
  a.ln1_mean = buffer<float>(s + "ln1_mean");
  a.ln1_rstd = buffer<float>(s + "ln1_rstd");
  if (bf16_)
    a.qkv_h = buffer<cuda::bf16>(s + "qkv");
  else
    a.qkv = buffer<float>(s + "qkv");
  a.att = buffer<float>(s + "att");
  a.lse = buffer<float>(s + "lse");
  a.atty = matin(s + "atty");
  a.res2 = buffer<float>(s + "res2");
  a.ln2 = matin(s + "ln2");
  a.ln2_mean = buffer<float>(s + "ln2_mean");
  a.ln2_rstd = buffer<float>(s + "ln2_rstd");
  if (bf16_) {
    a.fch_h = buffer<cuda::bf16>(s + "fch");
    // The last layer to write the shared buffer finds its output still there in backward
    // (not so on a pipeline stage, where other micro-batches run in between).
    a.gelu_kept = l >= gelu_recomputed - (staged_ ? 0 : 1);
    a.fch_gelu.h = l >= gelu_recomputed ? buffer<cuda::bf16>(s + "fch_gelu")
                                        : buffer<cuda::bf16>("gelu_shared");
  } else {
    a.fch = buffer<float>(s + "fch");
    a.fch_gelu = matin(s + "fch_gelu");
  }
  a.res3 = buffer<float>(s + "res3");
  return a;
}

void CudaBackend::setup_layers(const BackendOptions& options) {
  const int L = layout_.num_layers();
  const int gelu_recomputed = recompute_ || options.recompute_gelu_layers < 0
                                  ? L
                                  : std::min(L, options.recompute_gelu_layers);
  // One set per pipeline slot (buffer_plan.h: "slot<s>." names); slot 0 is what a whole-model
  // step uses.
  for (int s = 0; s < pipeline_slots_; ++s) {
    const std::string prefix = s == 0 ? "" : "slot" + std::to_string(s) + ".";
    Slot slot;
    if (recompute_) {
      const LayerActs shared = layer_acts("", 0, gelu_recomputed);
      for (int l = 0; l < L; ++l) {
        LayerActs a = shared;
        if (l > 0 || s > 0) a.res3 = buffer<float>(prefix + "layer" + std::to_string(l) + ".res3");
        a.gelu_kept = bf16_ && l == L - 1;  // the only layer not run again in backward
        slot.acts.push_back(a);
      }
    } else {
      for (int l = 0; l < L; ++l) slot.acts.push_back(layer_acts(prefix, l, gelu_recomputed));
    }
    slot.encoded = buffer<float>(prefix + "encoded");
    slot.lnf = matin(prefix + "lnf");
    slot.lnf_mean = buffer<float>(prefix + "lnf_mean");
    slot.lnf_rstd = buffer<float>(prefix + "lnf_rstd");
    slot.inputs = buffer<int>(prefix + "inputs");
    slot.targets = buffer<int>(prefix + "targets");
    slots_.push_back(std::move(slot));
  }
  acts_ = slots_[0].acts;
  sp_grads_ = buffer<float>("sp_grads");
  for (int i = 0; i < (staged_ ? stage_buffer_count() : 0); ++i)
    stage_buffers_.push_back(buffer_ptr("stage" + std::to_string(i)));
}

void CudaBackend::setup_spans() {
  std::vector<std::pair<size_t, size_t>> ranges;
  std::vector<bool> decays;
  for (const TensorInfo& t : layout_.tensors()) {
    ranges.push_back({t.offset, t.offset + t.numel});
    decays.push_back(t.decays());
  }
  std::vector<cuda::AdamWSpan> spans = cuda::adamw_spans(ranges, decays);
  if (split_master_) spans = cuda::with_split_master(spans, split_ranges_, lo_shifts_);
  n_adamw_spans_ = int(spans.size());
  // The tensors whose gradients are only added to (see added_grad_spans_).
  std::vector<std::pair<size_t, size_t>> added;
  if (bf16_ && bf16_logits_) {
    pack_weight_grads_ = kernels_.bf16_weight_grads;
    // The output layer writes the word embedding's gradient; the first stage's embedding only
    // adds to it (buffer_plan.cpp decides the same).
    std::vector<size_t> written;
    if (layout_.has_final_norm() && layout_.has_wte()) written.push_back(layout_.wte());
    for (int l = 0; l < layout_.num_layers(); ++l) {
      const LayerOffsets& o = layout_.layer(l);
      written.insert(written.end(), {o.qkv_w, o.proj_w, o.fc_w, o.fc2_w});
    }
    for (const TensorInfo& t : layout_.tensors()) {
      const bool is_written = std::find(written.begin(), written.end(), t.offset) != written.end();
      (is_written ? written_grads_ : added).push_back({t.offset, t.offset + t.numel});
      if (is_written && packs(t.offset)) packed_grads_.push_back({t.offset, t.offset + t.numel});
    }
  }
  if (lo_in_grads_)
    for (const auto& r : split_ranges_)
      if (std::find(packed_grads_.begin(), packed_grads_.end(), r) == packed_grads_.end())
        throw std::logic_error("cuda backend: a split master's low halves in an unpacked gradient");
  const std::vector<cuda::AdamWSpan> packed_spans = cuda::with_bf16_grads(spans, packed_grads_);
  const std::vector<cuda::AdamWSpan> added_spans =
      cuda::adamw_spans(added, std::vector<bool>(added.size(), false));
  n_added_grad_spans_ = int(added_spans.size());
  if (packed_grads_.empty() != (packed_spans_ == nullptr) ||
      added_spans.empty() != (added_grad_spans_ == nullptr))
    throw std::logic_error("cuda backend: the buffer plan's span tables disagree with the model");
  cuda_tool_error([&] {
    GPT_CUDA_CHECK(cudaMemcpy(adamw_spans_, spans.data(), spans.size() * sizeof(spans[0]),
                              cudaMemcpyHostToDevice));
    if (packed_spans_)
      GPT_CUDA_CHECK(cudaMemcpy(packed_spans_, packed_spans.data(),
                                spans.size() * sizeof(spans[0]), cudaMemcpyHostToDevice));
    if (added_grad_spans_)
      GPT_CUDA_CHECK(cudaMemcpy(added_grad_spans_, added_spans.data(),
                                added_spans.size() * sizeof(added_spans[0]),
                                cudaMemcpyHostToDevice));
    return 0;
  });
}

CudaBackend::CudaBackend(const ModelConfig& config, const ParamLayout& layout,
                         const BackendOptions& options)
    : cfg_(config),
      layout_(layout),
      B_(options.micro_batch),
      T_(config.seq_length),
      bf16_(options.bf16),
      fp16_(options.fp16 && !options.bf16),
      recompute_(options.recompute_activations),
      dropout_(options.hidden_dropout),
      att_dropout_(options.attention_dropout),
      flash_((options.bf16 || options.fp16) &&
             cuda::flash_attention_supported(config.hidden_size, config.num_heads)),
      kernels_(options.kernels) {
  init_parallel(options);
  graphs_ = kernels_.cuda_graphs && tp_ == 1 && !staged_;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw suite::ToolError("--device cuda: no CUDA device is visible (check the driver and "
                           "CUDA_VISIBLE_DEVICES)");
  cuda_tool_error([&] {
    GPT_CUDA_CHECK(cudaGetDevice(&device_));
    if (options.cuda_stream)
      stream_ = static_cast<cudaStream_t>(options.cuda_stream);
    else
      GPT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    owns_stream_ = !options.cuda_stream;
    return 0;
  });
  try {
    flat_padding_ = options.flat_padding;  // zeroed below with the rest
    shard_ = OptimizerShard(options.optimizer_shard, layout_.total() + flat_padding_);
    split_master_ = bf16_ && options.split_master && options.optimizer_shard.empty();
    want_sparse_ =
        (options.shard_master && bf16_ && !options.optimizer_shard.empty()) || split_master_;
    if (split_master_) {
      split_ranges_ = split_master_tensors(layout_);
      fp32_ranges_ = fp32_read_tensors(layout_);  // every tensor but the split ones
      // The low halves in the gradients' second halves: only where every split tensor's
      // gradient is packed in bf16 at each step (packs(): 16-byte aligned; bf16 logits) and
      // nothing else writes them (one micro-batch, one process).
      lo_in_grads_ = options.one_micro_batch_steps && tp_ == 1 && !staged_ && bf16_logits_ &&
                     options.kernels.bf16_weight_grads;
      for (const auto& [begin, end] : split_ranges_) lo_in_grads_ &= begin % 4 == 0 && end % 4 == 0;
      lo_shifts_ = lo_in_grads_ ? std::vector<long long>() : cuda::packed_lo_shifts(split_ranges_);
      if (lo_in_grads_)
        for (const auto& [begin, end] : split_ranges_) lo_shifts_.push_back((long long)(end));
    }
    const BufferPlanOptions plan_opts = plan_options(options);
    plan_ = plan_buffers(cfg_, layout_.total(), plan_opts);
    allocate(plan_, plan_opts);
    const size_t BT = size_t(B_) * T_;
    params_ = buffer<float>("params");
    grads_ = buffer<float>("grads");
    m_ = buffer<float>("adam_m");
    v_ = buffer<float>("adam_v");
    params_h_ = buffer<cuda::bf16>("params_bf16");
    params_lo_ = lo_in_grads_ ? reinterpret_cast<uint16_t*>(grads_) : buffer<uint16_t>("params_lo");
    params_hf_ = buffer<cuda::fp16>("params_fp16");
    setup_layers(options);
    encoded_ = buffer<float>("encoded");
    lnf_ = matin("lnf");
    lnf_mean_ = buffer<float>("lnf_mean");
    lnf_rstd_ = buffer<float>("lnf_rstd");
    classifier_rows_ = int(std::min<size_t>(BT, std::max(1, options.classifier_rows)));
    logits_h_ = buffer<cuda::bf16>("logits_bf16");
    logits_ = buffer<float>("logits");
    losses_ = buffer<float>("losses");
    loss_ = buffer<float>("loss");
    scratch_c_ = buffer<float>("scratch_c");
    dln_ = buffer<float>("dln");
    dfch_h_ = buffer<cuda::bf16>("dfch_bf16");
    dqkv_h_ = buffer<cuda::bf16>("dqkv_bf16");
    dres_ = buffer<float>("dres");
    datty_h_ = buffer<cuda::bf16>("datty_bf16");
    dres_h_ = buffer<cuda::bf16>("dres_bf16");
    dbranch_h_ = buffer<cuda::bf16>("dbranch_bf16");
    dln_h_ = buffer<cuda::bf16>("dln_bf16");
    fc2_out_h_ = buffer<cuda::bf16>("fc2_out_bf16");
    dfch_gelu_ = buffer<float>("dfch_gelu");
    dfch_ = buffer<float>("dfch");
    datty_ = buffer<float>("datty");
    dqkv_ = buffer<float>("dqkv");
    dbranch_ = buffer<float>("dbranch");
    inputs_ = buffer<int>("inputs");
    targets_ = buffer<int>("targets");
    cuda_tool_error([&] {
      GPT_CUDA_CHECK(cudaMallocHost(&inputs_host_, BT * sizeof(int)));
      GPT_CUDA_CHECK(cudaMallocHost(&targets_host_, BT * sizeof(int)));
      GPT_CUDA_CHECK(cudaMallocHost(&loss_host_, sizeof(float)));
      GPT_CUDA_CHECK(cudaMallocHost(&step_host_, sizeof(cuda::StepDecision)));
      GPT_CUDA_CHECK(cudaEventCreateWithFlags(&tokens_uploaded_, cudaEventDisableTiming));
      GPT_CUDA_CHECK(cudaEventCreateWithFlags(&step_decided_, cudaEventDisableTiming));
      return 0;
    });
    step_sums_ = buffer<double>("step_sums");
    device_dropout_key_ = buffer<uint64_t>("dropout_key");
    step_decision_ = buffer<cuda::StepDecision>("step_decision");
    adamw_spans_ = buffer<cuda::AdamWSpan>("adamw_spans");
    packed_spans_ = buffer<cuda::AdamWSpan>("packed_spans");
    added_grad_spans_ = buffer<cuda::AdamWSpan>("added_grad_spans");
    setup_spans();
    // Defined state: zero parameters, moments and gradients (set_params follows in practice).
    Enter scope(*this);
    for (float* p : {params_, grads_, m_, v_})
      cuda_tool_error([&] {
        const size_t count = p == m_ || p == v_ ? shard_.size() : layout_.total() + flat_padding_;
        if (p == params_ && sparse_.base) return 0;  // zeroed when mapped
        GPT_CUDA_CHECK(cudaMemsetAsync(p, 0, count * sizeof(float), stream_));
        return 0;
      });
    if (split_master_)  // zero masters: both halves 0 (in the zeroed gradients, or their own)
      cuda_tool_error([&] {
        size_t split = 0;
        for (const auto& [begin, end] : split_ranges_) split += end - begin;
        GPT_CUDA_CHECK(
            cudaMemsetAsync(params_h_, 0, layout_.total() * sizeof(cuda::bf16), stream_));
        if (!lo_in_grads_)
          GPT_CUDA_CHECK(cudaMemsetAsync(params_lo_, 0, split * sizeof(uint16_t), stream_));
        return 0;
      });
    refresh_half_params();
  } catch (...) {
    for (void* p : allocations_) cudaFree(p);
    free_host_side();
    if (owns_stream_) cudaStreamDestroy(stream_);
    throw;
  }
}

void CudaBackend::free_host_side() {
  cudaFreeHost(inputs_host_);
  cudaFreeHost(targets_host_);
  cudaFreeHost(loss_host_);
  cudaFreeHost(step_host_);
  if (dp_head_host_) cudaFreeHost(dp_head_host_);
  if (tokens_uploaded_) cudaEventDestroy(tokens_uploaded_);
  if (step_decided_) cudaEventDestroy(step_decided_);
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  for (cudaGraphExec_t g : step_graph_)
    if (g) cudaGraphExecDestroy(g);
  for (void* p : allocations_) cudaFree(p);
  free_host_side();
  if (owns_stream_) cudaStreamDestroy(stream_);
}

std::string CudaBackend::name() const {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device_);
  return std::string("cuda (") + prop.name + (bf16_ ? ", bf16" : fp16_ ? ", fp16" : ", fp32") + ")";
}

std::string CudaBackend::attention_path() const {
  const int C = cfg_.hidden_size, NH = cfg_.num_heads, hs = C / NH;
  const std::string head = "head size " + std::to_string(hs);
  std::string graphs = parallel_note();
  // Data parallelism with overlap: its collectives are in the step graphs too (queue_step).
  if (graphs_ && captured_hooks_)
    graphs += std::string("; CUDA graphs on (with the bucket reductions") +
              (params_needed_ ? " and the parameter all-gathers)" : ")");
  if (flash_) {
    Enter scope(*this);  // the kernel switches (--sm90-attention) as the step sees them
    const std::string drop = att_dropout_ > 0 ? ", attention dropout in the kernels" : "";
    if (bf16_ && cuda::flash_attention_uses_hopper(C, NH))
      return "flash sm90 (wgmma, " + head + drop + ")" + graphs;
    // Head sizes over 64 with 16-byte copies take the --flash-tiles shape.
    const std::string tiles =
        hs > 64 && hs % 8 == 0
            ? std::string(", tiles ") + kFlashTiles[flash_generic_tiles(kernels_.flash_tiles)].name
            : "";
    return std::string("flash mma.sync (") + (bf16_ ? "bf16, " : "fp16, ") + head + tiles + drop +
           ")" + graphs;
  }
  std::string why = !bf16_ && !fp16_
                        ? std::string("the flash kernels take --bf16 or --fp16 (this run is fp32)")
                           : head + " is not a multiple of 4 up to " +
                                 std::to_string(cuda::kFlashMaxHeadSize);
  return "fp32 fallback materialising att [B,NH,T,T] (" +
         std::to_string(size_t(NHl_) * T_ * T_ * sizeof(float) / 1000000) +  // this rank's heads
         " MB per sample and layer): " + why + graphs;
}

void CudaBackend::refresh_half_params() {
  if (split_master_) {  // the split tensors' halves are the masters themselves
    for (const auto& [lo, hi] : fp32_ranges_) cuda::to_bf16(params_h_ + lo, params_ + lo, hi - lo);
    return;
  }
  if (sparse_.base) return refresh_sparse_half();
  if (bf16_) cuda::to_bf16(params_h_, params_, layout_.total());
  if (fp16_) cuda::to_fp16(params_hf_, params_, layout_.total());
}

CudaBackend::Enter::Enter(const CudaBackend& be)
    : previous_(cuda::stream()), previous_kernels_(cuda::kernel_config()) {
  GPT_CUDA_CHECK(cudaSetDevice(be.device_));
  cuda::set_stream(be.stream_);
  cuda::set_kernel_config(be.kernels_);
  be.use_tp_stream();
}

CudaBackend::Enter::~Enter() {
  cuda::set_stream(previous_);
  cuda::set_kernel_config(previous_kernels_);
}

void CudaBackend::set_params(const float* host) {
  if (split_master_) return set_params_split(host);
  if (sparse_.base) return set_params_sparse(host);
  cuda_tool_error([&] {
    Enter scope(*this);
    GPT_CUDA_CHECK(cudaMemcpyAsync(params_, host, layout_.total() * sizeof(float),
                                   cudaMemcpyHostToDevice, stream_));
    refresh_half_params();
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // host buffer may be reused at once
    return 0;
  });
}

namespace {
void download(float* host, const float* dev, size_t n, cudaStream_t s) {
  GPT_CUDA_CHECK(cudaMemcpyAsync(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost, s));
  GPT_CUDA_CHECK(cudaStreamSynchronize(s));
}
}  // namespace

void CudaBackend::get_params(float* host) const {
  cuda_tool_error([&] {
    Enter scope(*this);
    finish_params();
    sync_comm();
    if (split_master_) {
      get_params_split(host);
      return 0;
    }
    if (sparse_.base) {
      get_params_sparse(host);  // through the ranks (set_full_params)
      return 0;
    }
    download(host, params_, layout_.total(), stream_);
    return 0;
  });
}

void CudaBackend::set_optimizer_state(const float* m, const float* v) {
  if (sharded_moments()) return set_optimizer_shard(m, v);
  cuda_tool_error([&] {
    Enter scope(*this);
    const size_t bytes = layout_.total() * sizeof(float);
    GPT_CUDA_CHECK(cudaMemcpyAsync(m_, m, bytes, cudaMemcpyHostToDevice, stream_));
    GPT_CUDA_CHECK(cudaMemcpyAsync(v_, v, bytes, cudaMemcpyHostToDevice, stream_));
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return 0;
  });
}

void CudaBackend::get_optimizer_state(float* m, float* v) const {
  if (sharded_moments()) return get_optimizer_shard(m, v);
  cuda_tool_error([&] {
    Enter scope(*this);
    download(m, m_, layout_.total(), stream_);
    download(v, v_, layout_.total(), stream_);
    return 0;
  });
}

void CudaBackend::get_grads(float* host) const {
  cuda_tool_error([&] {
    Enter scope(*this);
    download(host, grads_, layout_.total(), stream_);
    if (weight_grads_stale_)
      for (const auto& [begin, end] : written_grads_) std::fill(host + begin, host + end, 0.0f);
    else if (weight_grads_packed_)
      for (const auto& [begin, end] : packed_grads_) {
        std::vector<cuda::bf16> packed(end - begin);
        std::memcpy(static_cast<void*>(packed.data()), host + begin, packed.size() * sizeof(cuda::bf16));
        for (size_t i = 0; i < packed.size(); ++i) host[begin + i] = __bfloat162float(packed[i]);
      }
    return 0;
  });
}

bool CudaBackend::packs(size_t offset) const {
  // wte's gradient stays fp32: each classifier chunk and the embedding add to it. Packed tensors
  // start on 16 bytes (cuBLASLt's output, AdamW's and the norm's 8-byte bf16 loads).
  return pack_weight_grads_ && !(layout_.has_wte() && offset == layout_.wte()) && offset % 4 == 0;
}

void CudaBackend::unpack_weight_grads() {
  if (lo_in_grads_)  // the fp32 storage's second halves hold the masters' low halves
    throw std::logic_error("cuda backend: a second micro-batch in a step of a backend made for "
                           "one (BackendOptions::one_micro_batch_steps)");
  for (const auto& [begin, end] : packed_grads_) {
    const size_t n = end - begin;
    cuda::Scratch<cuda::bf16> packed(n);
    GPT_CUDA_CHECK(cudaMemcpyAsync(packed, grads_ + begin, n * sizeof(cuda::bf16),
                                   cudaMemcpyDeviceToDevice, stream_));
    cuda::to_fp32(grads_ + begin, packed, n);
  }
  weight_grads_packed_ = false;
}

void CudaBackend::clear_stale_weight_grads() {
  if (!weight_grads_stale_) return;
  // With the low halves in the gradients, the packed tensors' zeros are packed bf16 zeros.
  for (const auto& [begin, end] : written_grads_) {
    const size_t elem = lo_in_grads_ && packs(begin) ? sizeof(cuda::bf16) : sizeof(float);
    GPT_CUDA_CHECK(cudaMemsetAsync(grads_ + begin, 0, (end - begin) * elem, stream_));
  }
  weight_grads_stale_ = false;
  if (lo_in_grads_) weight_grads_packed_ = true;
}

void CudaBackend::zero_grad() {
  cuda_tool_error([&] {
    Enter scope(*this);
    if (added_grad_spans_) {
      cuda::zero_spans(grads_, added_grad_spans_, n_added_grad_spans_);
      weight_grads_stale_ = true;
      weight_grads_packed_ = false;
    } else {
      GPT_CUDA_CHECK(cudaMemsetAsync(grads_, 0, layout_.total() * sizeof(float), stream_));
    }
    return 0;
  });
}

void CudaBackend::upload_tokens(const int* inputs, const int* targets) {
  // A pipeline stage uploads only what it reads (nullptr: the inputs past the first stage, the
  // targets before the last).
  const size_t BT = size_t(B_) * T_;
  for (const int* ids : {inputs, targets}) {
    for (size_t i = 0; ids && i < BT; ++i) {
      // An out-of-range id would read outside wte on the device: refuse it here.
      if (ids[i] < 0 || ids[i] >= cfg_.vocab_size)
        throw suite::ToolError("cuda backend: token id out of range [0, " +
                               std::to_string(cfg_.vocab_size) + ")");
    }
  }
  // The pinned staging is free once the previous upload has been copied (queued micro-batches
  // do not wait for their step).
  GPT_CUDA_CHECK(cudaEventSynchronize(tokens_uploaded_));
  if (inputs) {
    std::memcpy(inputs_host_, inputs, BT * sizeof(int));
    GPT_CUDA_CHECK(cudaMemcpyAsync(inputs_, inputs_host_, BT * sizeof(int),
                                   cudaMemcpyHostToDevice, stream_));
  }
  if (targets) {
    std::memcpy(targets_host_, targets, BT * sizeof(int));
    GPT_CUDA_CHECK(cudaMemcpyAsync(targets_, targets_host_, BT * sizeof(int),
                                   cudaMemcpyHostToDevice, stream_));
  }
  GPT_CUDA_CHECK(cudaEventRecord(tokens_uploaded_, stream_));
}

void CudaBackend::store(const MatIn& dst, const float* src, size_t n) {
  if (dst.hf) cuda::to_fp16(dst.hf, src, n);  // fp32: nothing to do (--bf16 never stages)
}

void CudaBackend::linear_forward(float* out, const MatIn& inp, size_t w, size_t b, int C, int OC,
                                 int rows) {
  const float* bias = b == kNoBias ? nullptr : params_ + b;
  if (rows < 0) rows = B_ * T_;
  if (bf16_)
    cuda::matmul_forward_bf16(out, inp.h, params_h_ + w, bias, 1, rows, C, OC);
  else if (fp16_)
    cuda::matmul_forward_fp16(out, inp.hf, params_hf_ + w, bias, 1, rows, C, OC);
  else
    cuda::matmul_forward(out, inp.f, params_ + w, bias, 1, rows, C, OC);
}

void CudaBackend::linear_backward(float* dinp, size_t w, size_t b, const float* dout,
                                  const MatIn& inp, int C, int OC, int rows) {
  float* dbias = b == kNoBias ? nullptr : grads_ + b;
  if (rows < 0) rows = B_ * T_;
  if (bf16_) {
    cuda::matmul_backward_bf16(dinp, grads_ + w, dbias, dout, inp.h, params_h_ + w, 1, rows, C, OC,
                               /*accumulate_dinp=*/false);
  } else if (fp16_) {
    cuda::matmul_backward_fp16(dinp, grads_ + w, dbias, dout, inp.hf, params_hf_ + w, 1, rows, C,
                               OC, /*accumulate_dinp=*/false);
  } else {
    GPT_CUDA_CHECK(cudaMemsetAsync(dinp, 0, size_t(rows) * C * sizeof(float), stream_));
    cuda::matmul_backward(dinp, grads_ + w, dbias, dout, inp.f, params_ + w, 1, rows, C, OC);
  }
}

void CudaBackend::classifier(bool backward, float loss_weight) {
  if (bf16_logits_) return classifier_bf16(backward, loss_weight);
  // Vl_: this rank's vocabulary rows (all Vp without tensor parallelism).
  const int C = cfg_.hidden_size, Vp = Vl_;
  const int BT = B_ * T_;
  for (int r0 = 0; r0 < BT; r0 += classifier_rows_) {
    const int rows = std::min(classifier_rows_, BT - r0);
    const size_t off = size_t(r0) * C;
    const MatIn lnf{lnf_.f ? lnf_.f + off : nullptr, lnf_.h ? lnf_.h + off : nullptr,
                    lnf_.hf ? lnf_.hf + off : nullptr};
    linear_forward(logits_, lnf, layout_.wte(), kNoBias, C, Vp, rows);
    // In place: logits_ becomes dlogits when backward.
    cross_entropy(logits_, r0, rows, backward, loss_weight);
    if (backward) linear_backward(dln_ + off, layout_.wte(), kNoBias, logits_, lnf, C, Vp, rows);
  }
  // Each TP rank's vocabulary rows gave a part of the input gradient (sequence parallel: the
  // sum of this rank's rows, at dln_ + row0_·C).
  if (backward && tp_ > 1) sum_rows(dln_);
}

// The fp32 and --fp16 layer (--bf16: layer_forward_bf16).
void CudaBackend::layer_forward(int l, const float* residual) {
  using namespace cuda;
  // This rank's attention width, heads and FFN columns (all of them without tensor parallelism).
  const int B = B_, T = T_, C = cfg_.hidden_size, F = Fl_, NH = NHl_, Ca = Cl_;
  const size_t BTC = size_t(B) * T * C, BTF = size_t(B) * T * F, BTCa = size_t(B) * T * Ca;
  const size_t RC = size_t(rows_) * C;  // the residual stream: this rank's rows (sequence parallel)
  // Row-parallel products: the bias once (TP rank 0), then the sum over the TP group (with
  // sequence parallelism this rank's rows of it).
  const bool bias_here = tp_rank_ == 0;
  const auto row_parallel = [&](float* out, const MatIn& inp, size_t w, size_t b, int Cin) {
    if (!sp_) {
      linear_forward(out, inp, w, bias_here ? b : kNoBias, Cin, C);
      if (tp_ > 1) tp_sum(out, BTC);
      return;
    }
    cuda::Scratch<float> part(BTC);
    linear_forward(part, inp, w, bias_here ? b : kNoBias, Cin, C);
    scatter_rows(part, out);
  };
  const LayerOffsets& o = layout_.layer(l);
  const LayerActs& a = acts_[l];
  float* ln1 = fp32_or(a.ln1, scratch_c_);
  layernorm_rows(ln1, a.ln1_mean, a.ln1_rstd, residual, o.ln1_w, o.ln1_b);
  store(a.ln1, ln1, BTC);
  linear_forward(a.qkv, a.ln1, o.qkv_w, o.qkv_b, C, 3 * Ca);
  if (flash_) {
    attention_forward_fp16(a, l);
  } else {
    float* atty = fp32_or(a.atty, scratch_c_);
    attention_forward(atty, a.att, a.qkv, B, T, Ca, NH, training_ ? att_dropout_ : 0.0f,
                      attention_key(l), rank_heads());
    store(a.atty, atty, BTCa);
  }
  row_parallel(a.res2, a.atty, o.proj_w, o.proj_b, Ca);
  dropout(a.res2, 1 + 2 * global_layer(l));
  residual_forward(a.res2, a.res2, residual, int(RC));
  float* ln2 = fp32_or(a.ln2, scratch_c_);
  layernorm_rows(ln2, a.ln2_mean, a.ln2_rstd, a.res2, o.ln2_w, o.ln2_b);
  store(a.ln2, ln2, BTC);
  linear_forward(a.fch, a.ln2, o.fc_w, o.fc_b, C, F);
  if (a.fch_gelu.hf)
    gelu_forward_fp16(a.fch_gelu.hf, a.fch, int(BTF));
  else
    gelu_forward(a.fch_gelu.f, a.fch, int(BTF));
  row_parallel(a.res3, a.fch_gelu, o.fc2_w, o.fc2_b, F);
  dropout(a.res3, 2 + 2 * global_layer(l));
  residual_forward(a.res3, a.res3, a.res2, int(RC));
}

// rows_ = B·T but with sequence parallelism (a rank's rows of the residual stream, from row0_,
// which drop what those rows drop in a one-GPU run).
void CudaBackend::dropout(float* x, int site) {
  if (training_ && dropout_ > 0)
    cuda::dropout_forward(x, size_t(rows_) * cfg_.hidden_size, dropout_,
                          site_key(site), row0_ * cfg_.hidden_size);
}

const float* CudaBackend::branch_grad(int site) {
  if (dropout_ <= 0) return dres_;
  cuda::dropout_backward(dbranch_, dres_, size_t(rows_) * cfg_.hidden_size, dropout_,
                         site_key(site), row0_ * cfg_.hidden_size);
  return dbranch_;
}

HeadRange CudaBackend::rank_heads() const {
  return HeadRange::of_rank(cfg_.num_heads, tp_, tp_rank_);
}

void CudaBackend::forward(bool training) {
  const int B = B_, T = T_, C = cfg_.hidden_size;
  training_ = training;
  // The step graph captures no collective (graphs_ is off with tensor parallelism).
  // Where the parameters up to layer l (-1: the embeddings) end (--overlap-param-gather): the
  // next layer's, the final LayerNorm's on the last stage, else this stage's end.
  const int L = layout_.num_layers();
  auto upto = [&](int l) {
    if (l + 1 < L) return layout_.layer(l + 1).ln1_w;
    return layout_.has_final_norm() ? layout_.lnf_w() : layout_.total();
  };
  params_needed(upto(-1));
  // A pipeline stage past the first starts from the activation it received.
  if (layout_.has_wpe()) {
    embedding_forward();
    dropout(encoded_, 0);
  } else {
    stage_input();
  }
  const float* residual = encoded_;
  Residual next{encoded_};  // --bf16: the residual entering the next LayerNorm
  for (int l = 0; l < L; ++l) {
    params_needed(upto(l));
    if (bf16_)
      next = layer_forward_bf16(l, next);
    else
      layer_forward(l, residual);
    residual = acts_[l].res3;  // --bf16: written by the next LayerNorm
  }
  params_needed(layout_.total());
  // A stage before the last hands its output on (--bf16: its last layer wrote res3 itself).
  if (!layout_.has_final_norm()) return stage_output(residual);
  if (bf16_) {
    layernorm_forward_bf16(next, lnf_.h, lnf_mean_, lnf_rstd_, layout_.lnf_w(), layout_.lnf_b());
  } else {
    float* lnf = fp32_or(lnf_, scratch_c_);
    layernorm_rows(lnf, lnf_mean_, lnf_rstd_, residual, layout_.lnf_w(), layout_.lnf_b());
    store(lnf_, lnf, size_t(B) * T * C);
  }
  // The tied output layer over the padded vocabulary runs in classifier().
}

float CudaBackend::finish_loss() {
  cuda::mean_to_device(loss_, losses_, B_ * T_);
  GPT_CUDA_CHECK(cudaMemcpyAsync(loss_host_, loss_, sizeof(float), cudaMemcpyDeviceToHost, stream_));
  GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return *loss_host_;
}

float CudaBackend::forward_loss(const int* inputs, const int* targets) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    upload_tokens(inputs, targets);
    forward(/*training=*/false);
    classifier(/*backward=*/false, 0.0f);
    return finish_loss();
  });
}

void CudaBackend::step_kernels(float loss_weight) {
  forward(/*training=*/true);
  classifier(/*backward=*/true, loss_weight);
  cuda::mean_to_device(loss_, losses_, B_ * T_);
  if (sp_) sp_hold_grads();
  backward();
  if (sp_) {
    sp_reduce_grads();
    grads_complete_from(0);  // --overlap-grad-reduce: every gradient is final now
  }
}

void CudaBackend::run_step(float loss_weight) {
  // A second micro-batch adds to the first one's gradients in fp32.
  if (weight_grads_packed_) unpack_weight_grads();
  const int kind = weight_grads_stale_ ? 1 : 0;
  queue_step(kind, loss_weight);
  // The weight gradients now hold this micro-batch's: packed when it wrote them (unless its
  // backward widened them for the overlapped reduction).
  if (weight_grads_stale_) weight_grads_packed_ = !packed_grads_.empty() && !reduce_in_backward_;
  weight_grads_stale_ = false;
}

DropKey CudaBackend::site_key(uint64_t site) const {
  return graphs_ ? DropKey::on_device(device_dropout_key_, site)
                 : DropKey(dropout_site_key(dropout_key_, site));
}

void CudaBackend::queue_step(int kind, float loss_weight) {
  // Under step graphs the kernels read the micro-batch's dropout key from the device (site_key):
  // stored here, in stream order before the micro-batch, eager or replayed.
  if (graphs_ && (dropout_ > 0 || att_dropout_ > 0))
    cuda::store_dropout_key(device_dropout_key_, dropout_key_);
  // A micro-batch whose data-parallel hooks queue collectives (the bucket reductions in its
  // backward, the parameters' all-gathers in its forward) has its own graphs, collectives
  // included; without the hooks' owner to account for its replays it runs eagerly.
  const bool reduces = reduce_in_backward_, gathers = params_pending_ && bool(params_needed_);
  if ((reduces || gathers) && !captured_hooks_) return step_kernels(loss_weight);
  const int key = kind + (reduces ? 2 : 0) + (gathers ? 4 : 0);
  if (!graphs_ || !warmed_up_[key] || graph_refused_[key]) {
    warmed_up_[key] = true;
    return step_kernels(loss_weight);
  }
  const bool hooks = reduces || gathers;
  cudaGraphExec_t& step_graph = step_graph_[key];
  if (!step_graph || step_graph_weight_[key] != loss_weight ||
      (hooks && !captured_hooks_->can_replay(key))) {
    if (step_graph) GPT_CUDA_CHECK(cudaGraphExecDestroy(step_graph));
    step_graph = nullptr;
    if (!capture_step(key, loss_weight)) return step_kernels(loss_weight);
  }
  GPT_CUDA_CHECK(cudaGraphLaunch(step_graph, stream_));
  if (hooks) captured_hooks_->replayed(key, stream_);
}

bool CudaBackend::capture_step(int key, float loss_weight) {
  cudaGraph_t graph = nullptr;
  if (key < 2) {
    GPT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      step_kernels(loss_weight);
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    GPT_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    const cudaError_t rc = cudaGraphInstantiate(&step_graph_[key], graph, 0);
    cudaGraphDestroy(graph);
    GPT_CUDA_CHECK(rc);
    step_graph_weight_[key] = loss_weight;
    return true;
  }
  // With the hooks: their collectives are captured on the communication stream, which joins the
  // capture where it first waits for an event recorded here (comm_waits_for_compute). A failure
  // (an NCCL or a driver that refuses the capture) falls back to the eager micro-batch; every
  // rank reaches capture_end, which agrees on the outcome, whatever failed where.
  std::string why;
  cudaGraphExec_t exec = nullptr;
  cudaError_t rc = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
  captured_hooks_->capture_begin();
  if (rc == cudaSuccess) {
    try {
      step_kernels(loss_weight);
    } catch (const std::exception& e) {
      why = e.what();
    }
    // The communication stream rejoins after its last collective, else the capture cannot end
    // (cudaErrorStreamCaptureUnjoined). Errors here leave the capture invalid, which ending it
    // reports.
    cudaStreamCaptureStatus comm_status = cudaStreamCaptureStatusNone;
    if (comm_.stream && cudaStreamIsCapturing(comm_.stream, &comm_status) == cudaSuccess &&
        comm_status == cudaStreamCaptureStatusActive) {
      if (cudaEventRecord(comm_.comm_done, comm_.stream) == cudaSuccess)
        cudaStreamWaitEvent(stream_, comm_.comm_done, 0);
    }
    rc = cudaStreamEndCapture(stream_, &graph);
    // The NCCL kernels keep the communication stream's priority inside the graph.
    if (rc == cudaSuccess)
      rc = cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority);
    if (graph) cudaGraphDestroy(graph);
  }
  if (rc != cudaSuccess) {
    if (why.empty()) why = cudaGetErrorString(rc);
    (void)cudaGetLastError();  // the failed capture's error is not the next call's
  }
  bool ok = false;
  try {
    ok = captured_hooks_->capture_end(key, why.empty());
  } catch (...) {
    if (exec) cudaGraphExecDestroy(exec);
    throw;
  }
  if (!ok) {
    if (exec) cudaGraphExecDestroy(exec);
    graph_refused_[key] = true;
    std::cerr << "note: CUDA graphs: the micro-batch with the "
              << (key & 2 ? "bucket reductions" : "parameter all-gathers")
              << " could not be captured ("
              << (why.empty() ? std::string("another rank's capture failed") : why)
              << "); it runs without a graph\n";
    return false;
  }
  step_graph_[key] = exec;
  step_graph_weight_[key] = loss_weight;
  return true;
}

float CudaBackend::forward_backward(const int* inputs, const int* targets, float loss_weight) {
  return cuda_tool_error([&] {
    Enter scope(*this);
    upload_tokens(inputs, targets);
    run_step(loss_weight);
    // Waits for the loss (the trainer queues its micro-batches with queue_micro_batch).
    GPT_CUDA_CHECK(cudaMemcpyAsync(loss_host_, loss_, sizeof(float), cudaMemcpyDeviceToHost,
                                   stream_));
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return *loss_host_;
  });
}

void CudaBackend::queue_micro_batch(const int* inputs, const int* targets, float loss_weight,
                                    int accum) {
  cuda_tool_error([&] {
    Enter scope(*this);
    upload_tokens(inputs, targets);
    reduce_in_backward_ = last_micro_batch(accum);
    packed_from_ = ~size_t(0);
    run_step(loss_weight);
    reduce_in_backward_ = false;
    cuda::add_step_loss(step_sums_, loss_, accum, queued_micro_batches_ == 0);
    ++queued_micro_batches_;
    return 0;
  });
}

Backend::StepEnd CudaBackend::end_step(const AdamWConfig& c, float lr, int step, float clip_grad,
                                       double loss_scale) {
  if (queued_micro_batches_ == 0) return Backend::end_step(c, lr, step, clip_grad, loss_scale);
  if (tp_ > 1) {
    // The norm is the TP group's (grad_norm): the host decides, as Backend::end_step does.
    step_loss_ = take_step_loss();
    return Backend::end_step(c, lr, step, clip_grad, loss_scale);
  }
  return cuda_tool_error([&] {
    Enter scope(*this);
    queued_micro_batches_ = 0;
    clear_stale_weight_grads();
    cuda::sum_squares_spans_to_device(step_sums_ + 1, grads_, grad_spans(), n_adamw_spans_);
    cuda::decide_step(step_decision_, step_sums_, step_sums_ + 1, clip_grad, loss_scale);
    GPT_CUDA_CHECK(cudaMemcpyAsync(step_host_, step_decision_, sizeof(cuda::StepDecision),
                                   cudaMemcpyDeviceToHost, stream_));
    GPT_CUDA_CHECK(cudaEventRecord(step_decided_, stream_));
    cuda::adamw_update_spans(params_, grads_, m_, v_, grad_spans(), n_adamw_spans_, lr, c.beta1,
                             c.beta2, c.eps, c.weight_decay, step, 1.0f, params_h_,
                             &step_decision_->grad_scale, &step_decision_->update, params_lo_);
    if (fp16_) refresh_half_params();  // unchanged parameters when the update was skipped
    // The step's one host wait, while AdamW runs.
    GPT_CUDA_CHECK(cudaEventSynchronize(step_decided_));
    StepEnd e;
    e.loss = step_host_->loss;
    e.norm = step_host_->norm;
    e.updated = step_host_->update != 0;
    return e;
  });
}

void CudaBackend::backward() {
  if (bf16_) return backward_bf16();
  using namespace cuda;
  const int B = B_, T = T_, C = cfg_.hidden_size, F = Fl_, NH = NHl_, Ca = Cl_;
  const size_t BTC = size_t(B) * T * C, BTF = size_t(B) * T * F, BTCa = size_t(B) * T * Ca;
  const int L = layout_.num_layers();
  // The LayerNorms' rows: with sequence parallelism this rank's (the residual stream's gradient
  // dres_ too); the products' inputs and outputs are whole.
  const int LB = sp_ ? 1 : B, LT = sp_ ? rows_ : T;
  const size_t RC = size_t(rows_) * C;
  const float* dln_rows = dln_ + row0_ * C;
  // A row-parallel product's backward from this rank's rows of its output gradient (gathered
  // with sequence parallelism, where its bias gradient is this rank's rows' share).
  const auto row_parallel = [&](float* dinp, size_t w, size_t b, const float* d, const MatIn& inp,
                                int Cin) {
    if (!sp_) return linear_backward(dinp, w, b, d, inp, Cin, C);
    cuda::Scratch<float> full(BTC);
    GPT_CUDA_CHECK(cudaMemcpyAsync(full + row0_ * C, d, RC * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream_));
    gather_rows(full.get());
    linear_backward(dinp, w, kNoBias, full, inp, Cin, C);
    bias_grad(grads_ + b, d, rows_, C);
  };
  const float* p = params_;
  float* g = grads_;
  auto zero = [&](float* x, size_t n) {
    GPT_CUDA_CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), stream_));
  };
  // classifier() has written dln_ and added the output layer's share of the wte gradient; a
  // stage before the last starts from the gradient of its output instead.
  if (layout_.has_final_norm()) {
    zero(dres_, RC);
    const float* last = L ? acts_.back().res3 : encoded_;
    layernorm_backward(dres_, g + layout_.lnf_w(), g + layout_.lnf_b(), dln_rows, last,
                       p + layout_.lnf_w(), lnf_mean_, lnf_rstd_, LB, LT, C);
  } else {
    load_stage_grad();
  }
  // dres_ carries the gradient of the residual stream down through the layers. Under tensor
  // parallelism the column-parallel products' input gradients (dln_) are partial sums.
  for (int l = L - 1; l >= 0; --l) {
    const LayerOffsets& o = layout_.layer(l);
    const LayerActs& a = acts_[l];
    const float* residual = l == 0 ? encoded_ : acts_[l - 1].res3;
    const int gl = global_layer(l);
    // With recompute the shared slot holds the last layer run; the last layer is still there
    // (not on a pipeline stage: other micro-batches ran in between).
    if (recompute_ && (l != L - 1 || staged_)) layer_forward(l, residual);
    row_parallel(dfch_gelu_, o.fc2_w, o.fc2_b, branch_grad(2 + 2 * gl), a.fch_gelu, F);
    gelu_backward_set(dfch_, a.fch, dfch_gelu_, int(BTF));
    linear_backward(dln_, o.fc_w, o.fc_b, dfch_, a.ln2, C, F);
    if (tp_ > 1) sum_rows(dln_);
    layernorm_backward(dres_, g + o.ln2_w, g + o.ln2_b, dln_rows, a.res2, p + o.ln2_w, a.ln2_mean,
                       a.ln2_rstd, LB, LT, C);
    row_parallel(datty_, o.proj_w, o.proj_b, branch_grad(1 + 2 * gl), a.atty, Ca);
    if (flash_) {
      attention_backward_fp16(a, l);
    } else {
      zero(dqkv_, 3 * BTCa);
      attention_backward(dqkv_, datty_, a.qkv, a.att, B, T, Ca, NH, att_dropout_,
                         attention_key(l), rank_heads());
    }
    linear_backward(dln_, o.qkv_w, o.qkv_b, dqkv_, a.ln1, C, 3 * Ca);
    if (tp_ > 1) sum_rows(dln_);
    layernorm_backward(dres_, g + o.ln1_w, g + o.ln1_b, dln_rows, residual, p + o.ln1_w,
                       a.ln1_mean, a.ln1_rstd, LB, LT, C);
    // --overlap-grad-reduce: this layer and those above are final (with sequence parallelism
    // only once the replicated tensors' shares are summed: sp_reduce_grads, then the caller).
    if (!sp_) grads_complete_from(o.ln1_w);
  }
  if (layout_.has_wpe())
    embedding_backward(branch_grad(0));
  else
    store_stage_grad();
  if (!sp_) grads_complete_from(0);
}

double CudaBackend::grad_norm() {
  // As the CPU backend: over the TP group, and without a last stage's tied word embedding.
  if (tp_ > 1 || (layout_.has_wte() && !layout_.has_wpe())) return tp_grad_norm();
  return cuda_tool_error([&] {
    Enter scope(*this);
    clear_stale_weight_grads();
    return std::sqrt(cuda::sum_squares_spans(grads_, grad_spans(), n_adamw_spans_));
  });
}

void CudaBackend::adamw_step(const AdamWConfig& c, float lr, int step, float grad_scale) {
  cuda_tool_error([&] {
    Enter scope(*this);
    clear_stale_weight_grads();
    // One launch for the whole model; the bf16 copy is refreshed in the same pass, the fp16
    // copy after it.
    cuda::adamw_update_spans(params_, grads_, m_, v_, grad_spans(), n_adamw_spans_, lr, c.beta1,
                             c.beta2, c.eps, c.weight_decay, step, grad_scale, params_h_,
                             nullptr, nullptr, params_lo_);
    if (fp16_) refresh_half_params();
    return 0;
  });
}

MemoryStats CudaBackend::memory() const {
  // Fixed buffers plus the stream-ordered pool that holds the kernels' scratch.
  uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, device_) == cudaSuccess) {
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &used_high);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &reserved_high);
  }
  // The step graph's scratch (its allocation nodes) lives in the graph memory pool.
  uint64_t graph_used = 0, graph_used_high = 0, graph_reserved = 0, graph_reserved_high = 0;
  cudaDeviceGetGraphMemAttribute(device_, cudaGraphMemAttrUsedMemCurrent, &graph_used);
  cudaDeviceGetGraphMemAttribute(device_, cudaGraphMemAttrUsedMemHigh, &graph_used_high);
  cudaDeviceGetGraphMemAttribute(device_, cudaGraphMemAttrReservedMemCurrent, &graph_reserved);
  cudaDeviceGetGraphMemAttribute(device_, cudaGraphMemAttrReservedMemHigh, &graph_reserved_high);
  const double mb = 1.0 / (1 << 20), fixed = double(allocated_bytes_);
  MemoryStats s;
  s.allocated_mb = (fixed + used + graph_used) * mb;
  s.max_allocated_mb = (fixed + used_high + graph_used_high) * mb;
  s.reserved_mb = (fixed + reserved + graph_reserved) * mb;
  s.max_reserved_mb = (fixed + reserved_high + graph_reserved_high) * mb;
  return s;
}

void CudaBackend::profiler(bool on) {
  cuda_tool_error([&] {
    Enter scope(*this);
    // The range covers queued work: let the steps before it finish outside, and those inside
    // finish inside.
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    GPT_CUDA_CHECK(on ? cudaProfilerStart() : cudaProfilerStop());
    return 0;
  });
}

void CudaBackend::synchronize() {
  cuda_tool_error([&] {
    Enter scope(*this);
    GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return 0;
  });
}

double CudaBackend::peak_tflops() const {
  // Dense peaks for MFU: bf16 tensor cores with --bf16, plain fp32 (no TF32) otherwise.
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device_) != cudaSuccess) return 0.0;
  const std::string name = prop.name;
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  const bool half = bf16_ || fp16_;  // the same dense tensor-core peak for both
  if (has("H100") && has("PCIe")) return half ? 756.0 : 51.2;
  if (has("H100") || has("H200") || has("GH200")) return half ? 989.4 : 66.9;
  if (has("A100")) return half ? 312.0 : 19.5;
  return 0.0;
}

std::unique_ptr<Backend> make_cuda_backend(const ModelConfig& config, const ParamLayout& layout,
                                           const BackendOptions& options) {
  return std::make_unique<CudaBackend>(config, layout, options);
}

}  // namespace gpt
