// The CUDA backend: the GPT forward/backward of cpu_backend.cpp composed from the kernels in
// kernels/ (namespace gpt::cuda), on one GPU (the current CUDA device at construction).
//
//   - Parameters, gradients and AdamW moments: fp32, one flat device buffer each (ParamLayout).
//   - --bf16 (cuda_backend_bf16.cu): activations in bf16 end to end, as PyTorch autocast keeps
//     them: every matmul output but the residual stream is bf16 (qkv, the MLP hidden, logits),
//     and so is every gradient a matmul reads or writes (the LayerNorm backward reads the bf16
//     input gradient of the matmul above it and writes a bf16 copy of the residual gradient;
//     GELU, attention and the classifier write bf16 gradients). The residual
//     stream, its gradient, LayerNorm statistics, the loss, the parameters, their gradients
//     and AdamW stay fp32; a bf16 copy of the parameters is refreshed by the AdamW pass itself
//     (without the distributed optimizer the matmul weights' fp32 masters are that copy plus
//     a low half: split_master_ below).
//     The layers' weight gradients of a step's first micro-batch are written in bf16 (as
//     autocast's are) and widened to fp32 only if another micro-batch adds to them
//     (pack_weight_grads_ below).
//     The attention projection's residual add runs in its matmul epilogue (beta = 1); fc2 writes
//     bf16 and the next LayerNorm adds it to the stream (Residual); biases in the cuBLASLt epilogue.
//     The GELU runs in the fc matmul's epilogue (kernels/sm90/gemm_sm90.cu on Hopper, else
//     cuBLASLt's; on the fp32 sum), which also writes the pre-activation kept for backward. The
//     GELU output (the fc2 input) of the first --recompute-gelu-layers layers (default all) is not
//     kept: one shared buffer, recomputed from the bf16 pre-activation in the GELU backward; the
//     other layers keep their own.
//     Attention is the fused flash kernel (kernels/flash_attention.cuh):
//     per layer only the row logsumexp lse [B,NH,T] is saved instead of att [B,NH,T,T] (head
//     sizes the flash kernels do not take, over 128, fall back to the fp32 attention below,
//     through fp32 copies). Attention dropout runs inside the kernels (no mask stored).
//   - --fp16: as --bf16 with fp16 copies and no cuBLASLt epilogue; attention is the flash kernel
//     with fp16 operands (cuda_backend_fp16.cu: fp16 copies of qkv and the output gradient in,
//     the output and lse saved, dqkv widened to fp32) where the head size suits it, else the fp32
//     attention below. The trainer's loss scaler finds overflows (fp16 inf) through the gradient
//     norm.
//   - fp32: attention materialises att [B,NH,T,T] with fp32 batched GEMMs (the test oracle).
//   - --recompute-activations: only each layer's output (the residual stream) is kept; the
//     layer's other activations live in one shared slot and are recomputed before its backward.
//   - All work is queued on the backend's own stream; the host waits only where the interface
//     returns a value (the micro-batch loss, the gradient norm) or copies to host memory. A
//     training micro-batch's kernels replay as one CUDA graph (run_step), with the NCCL collectives
//     that overlapped data parallelism queues during it on the communication stream (queue_step,
//     Backend::CapturedHooks); under dropout the kernels read the micro-batch's key from the
//     device (site_key), so the graph's fixed arguments serve every micro-batch.
//   - Deterministic: same inputs, bit-identical results (no atomics; cuBLAS on one stream).
//   - Tensor and pipeline parallelism (BackendOptions::stage, cuda_backend_stage.cu): a stage runs
//     its layer range (embedding on the first stage, final LayerNorm, output layer and loss on
//     the last) through stage_forward / stage_backward, with pipeline_slots copies of what a
//     micro-batch keeps for its backward. Under tensor parallelism a rank holds its heads, FFN
//     columns and vocabulary rows (Megatron's split): the row-parallel products (attention
//     projection, fc2) and the column-parallel input gradients are all-reduced over tp_comm on
//     the backend's stream (in bf16 with --bf16), and the loss is the vocabulary-parallel cross-entropy
//     (kernels/vocab_parallel.cuh). Step graphs are off there (collectives inside the step).
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/adamw.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/dropout_mask.h"
#include "kernels/step_end.cuh"
#include "train/backend/backend.h"
#include "train/backend/cuda/buffer_plan.h"
#include "train/backend/optimizer_shard.h"

namespace gpt {

class CudaBackend final : public Backend {
 public:
  CudaBackend(const ModelConfig& config, const ParamLayout& layout, const BackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override;
  std::string attention_path() const override;
  void set_params(const float* host) override;
  void get_params(float* host) const override;
  void set_optimizer_state(const float* m, const float* v) override;
  void get_optimizer_state(float* m, float* v) const override;
  void get_grads(float* host) const override;
  void zero_grad() override;
  float forward_backward(const int* inputs, const int* targets, float loss_weight) override;
  float forward_loss(const int* inputs, const int* targets) override;
  double grad_norm() override;
  void adamw_step(const AdamWConfig& config, float lr, int step, float grad_scale) override;
  // The step's loss stays on the device; end_step queues the norm, the decision and AdamW, then
  // waits for the loss and norm only (the update runs meanwhile).
  void queue_micro_batch(const int* inputs, const int* targets, float loss_weight,
                         int accum) override;
  StepEnd end_step(const AdamWConfig& config, float lr, int step, float clip_grad,
                   double loss_scale) override;
  MemoryStats memory() const override;
  double peak_tflops() const override;
  void profiler(bool on) override;
  void synchronize() override;
  // Data parallelism (cuda_backend_dist.cu).
  FlatBuffers flat_buffers() override;
  double take_step_loss() override;
  void prepare_grads_for_reduce() override;
  double grad_sum_squares(size_t begin, size_t end) override;
  void grad_sum_squares(const std::vector<std::pair<size_t, size_t>>& ranges,
                        double* out) override;
  void adamw_range(const AdamWConfig& config, float lr, int step, float grad_scale, size_t begin,
                   size_t end) override;
  bool device_step_end() const override { return queued_micro_batches_ > 0 && tp_ == 1; }
  double* queue_step_sums(const std::vector<std::pair<size_t, size_t>>& ranges,
                          const std::vector<size_t>& slots, size_t n, const double* head,
                          size_t n_head) override;
  void queue_step_decision(const double* sums, size_t n, size_t first_square, int data_parallel,
                           float clip_grad, double loss_scale) override;
  void adamw_range_decided(const AdamWConfig& config, float lr, int step, size_t begin,
                           size_t end) override;
  StepEnd read_step_decision(double* head, size_t n_head) override;
  void params_changed() override;
  void* grads_to_bf16(size_t begin, size_t end, size_t capacity) override;
  void grads_from_bf16(const void* scratch, size_t begin, size_t end) override;
  // Pipeline stages (cuda_backend_stage.cu).
  size_t stage_activation_elements() const override;
  dist::DType stage_activation_dtype() const override;
  float stage_forward(int slot, const int* inputs, const int* targets, const void* act_in,
                      void* act_out) override;
  void stage_backward(int slot, const void* dact_out, void* dact_in, float loss_weight) override;
  float stage_forward_loss(const int* inputs, const int* targets, const void* act_in,
                           void* act_out) override;
  void* stage_buffer(int which) override;
  void* comm_stream() override;
  void comm_waits_for_compute() override;
  void compute_waits_for_comm() override;
  void mark_comm(size_t i) override;
  void compute_waits_for_mark(size_t i) override;
  void params_changed_on_comm(size_t begin, size_t end) override;
  bool shards_master() const override { return sparse_.base != nullptr && !split_master_; }
  float* gather_staging(size_t n) override;
  void params_from_staging(const float* staging, int D, size_t m, size_t begin, size_t stride,
                           bool on_comm) override;
  void read_staging(float* host, const float* staging, size_t n) override;

 protected:
  // Widens this micro-batch's packed weight gradients of [begin, ...) first.
  void grads_complete_from(size_t begin) override;

 private:
  // A matmul input: fp32 (fp32 path), bf16 (--bf16) or fp16 (--fp16); the others are null.
  struct MatIn {
    float* f = nullptr;
    cuda::bf16* h = nullptr;
    cuda::fp16* hf = nullptr;
  };
  // Activations of one layer saved for backward. With recompute, every layer's pointers are
  // the one shared slot except res3 (the layer output).
  struct LayerActs {
    MatIn ln1, atty, ln2, fch_gelu;
    float *ln1_mean = nullptr, *ln1_rstd = nullptr, *qkv = nullptr, *att = nullptr,
          *lse = nullptr, *res2 = nullptr, *ln2_mean = nullptr, *ln2_rstd = nullptr,
          *fch = nullptr, *res3 = nullptr;
    cuda::bf16 *qkv_h = nullptr, *fch_h = nullptr;  // --bf16: the matmul outputs in bf16
    // --bf16: fch_gelu holds the forward's output at this layer's backward (its own buffer, or the
    // shared one that no later layer wrote); else the backward recomputes it there.
    bool gelu_kept = false;
  };
  // A gradient in fp32 (for bias sums) and its bf16 rounding (for the matmuls).
  struct Grad {
    const float* f;
    const cuda::bf16* h;
  };

  // Construction: the buffer plan (buffer_plan.h) allocated in order, then the members pointed
  // at its buffers by name (nullptr where the plan has none).
  BufferPlanOptions plan_options(const BackendOptions& options) const;
  void allocate(const BufferPlan& plan, const BufferPlanOptions& options);
  void* buffer_ptr(const std::string& name) const;
  template <class T>
  T* buffer(const std::string& name) const {
    return static_cast<T*>(buffer_ptr(name));
  }
  MatIn matin(const std::string& name) const;  // fp32, bf16 or fp16 as the precision has it
  // Layer l's buffers of a pipeline slot ("" for slot 0, else "slot<s>.").
  LayerActs layer_acts(const std::string& prefix, int l, int gelu_recomputed) const;
  void setup_layers(const BackendOptions& options);
  void setup_spans();  // the AdamW span tables, uploaded
  // Makes the backend's device, stream and kernel choices current for the kernels, and restores
  // the caller's on scope exit (the kernels' stream is per host thread and must not outlive us).
  class Enter {
   public:
    explicit Enter(const CudaBackend& be);
    ~Enter();
    Enter(const Enter&) = delete;
    Enter& operator=(const Enter&) = delete;

   private:
    cudaStream_t previous_;
    KernelConfig previous_kernels_;
  };
  void upload_tokens(const int* inputs, const int* targets);
  void free_host_side();  // pinned buffers and events (destructor, failed constructor)
  // The fp32 / --fp16 layer's staging: a kernel writes fp32 (scratch when the MatIn is fp16),
  // then store() fills the MatIn's fp16 copy.
  void store(const MatIn& dst, const float* src, size_t n);
  float* fp32_or(const MatIn& m, float* scratch) const { return m.f ? m.f : scratch; }
  // rows: how many rows of inp (default all B·T).
  void linear_forward(float* out, const MatIn& inp, size_t w, size_t b, int C, int OC, int rows = -1);
  // dinp is written (a fresh gradient buffer: no memset on the bf16 path), dweight/dbias added.
  void linear_backward(float* dinp, size_t w, size_t b, const float* dout, const MatIn& inp, int C,
                       int OC, int rows = -1);
  // The tied output layer and the loss, classifier_rows_ rows at a time, so that the fp32 logits
  // (and their bf16 copy in backward) exist for one chunk only. With backward, each chunk's
  // dlogits go straight into dln_ and the wte gradient.
  void classifier(bool backward, float loss_weight);
  void layer_forward(int l, const float* residual);
  // training: apply hidden dropout (forward_backward; evaluation never drops).
  void forward(bool training);
  // Hidden dropout in place on x [B,T,C] at a site (dropout_mask.h) when training_ and p > 0.
  void dropout(float* x, int site);
  // The gradient of a dropped-out branch: dres_ through the site's mask (dres_ without dropout).
  const float* branch_grad(int site);
  // This rank's heads among the model's (attention dropout hashes the model's head index).
  HeadRange rank_heads() const;
  float finish_loss();
  // stage_forward's and stage_forward_loss's pass on the current slot: the loss on the last stage.
  float stage_pass(const int* inputs, const int* targets, const void* act_in, void* act_out,
                   bool training);
  void backward();
  // The forward, the loss and the backward of one training micro-batch (no host work).
  void step_kernels(float loss_weight);
  // Queues a training micro-batch (queue_step) and then marks the weight gradients as
  // written (weight_grads_stale_ false; packed when this micro-batch wrote them).
  void run_step(float loss_weight);
  // Runs step_kernels as one CUDA graph when it can (see graphs_ below), else queues it. kind:
  // 1 when the micro-batch writes the weight gradients (the first after zero_grad), 0 adds.
  void queue_step(int kind, float loss_weight);
  // Captures step_kernels into step_graph_[key]. A micro-batch that calls the data-parallel
  // hooks (key >= 2) is captured with their collectives, the communication stream joining the
  // capture through the events the hooks record and rejoining before its end; if that capture
  // fails on any rank, false (after one line on stderr) and the key runs eagerly from then on.
  bool capture_step(int key, float loss_weight);

  // The --bf16 path (cuda_backend_bf16.cu).
  // The residual stream entering a LayerNorm: x, or x + branch when branch is set (the bf16 fc2
  // output of the layer below: that LayerNorm adds it, storing the sum to `sum`, the layer's
  // output res3, instead of fc2's epilogue reading and writing the fp32 stream; with hidden
  // dropout, also the projection's output, the LayerNorm applying dropout site `site` first).
  struct Residual {
    const float* x;
    const cuda::bf16* branch = nullptr;
    float* sum = nullptr;
    int site = -1;
  };
  void layernorm_forward_bf16(const Residual& in, cuda::bf16* out, float* mean, float* rstd,
                              size_t w, size_t b);
  // Layer l from `in`; returns what enters the next LayerNorm. recompute (the backward of
  // --recompute-activations): the activations the backward reads; fc2 is not run again, its
  // output res3 being kept.
  Residual layer_forward_bf16(int l, const Residual& in, bool recompute = false);
  // out = residual + dropout(inp·Wᵀ + b), the residual add fused into the matmul without dropout
  // (under tensor parallelism after the bf16 sum of the ranks' products).
  void branch_forward_bf16(float* out, const float* residual, const cuda::bf16* inp, size_t w,
                           size_t b, int C, int OC, int site);
  void attention_forward_bf16(const LayerActs& a, int l);
  // dqkv_h_ from datty_h_; adds the column sums of dqkv_h_ (the qkv bias gradient) to dbias.
  void attention_backward_bf16(const LayerActs& a, int l, float* dbias);
  void classifier_bf16(bool backward, float loss_weight);
  // The --fp16 layer's flash attention (cuda_backend_fp16.cu): atty.hf and lse from the fp32
  // qkv; dqkv_ (fp32) from datty_.
  void attention_forward_fp16(const LayerActs& a, int l);
  void attention_backward_fp16(const LayerActs& a, int l);
  // Dropout site `site`'s branch gradient from dres_ (and dres_h_): dres_ itself without dropout
  // or when the LayerNorm backward that wrote dres_h_ dropped it there (ln_dropped), else dropped
  // into dbranch_ / dbranch_h_.
  Grad branch_grad_bf16(int site, bool ln_dropped);
  void backward_bf16();

  ModelConfig cfg_;
  ParamLayout layout_;
  int B_, T_;
  bool bf16_, fp16_, recompute_;
  float dropout_;          // --hidden-dropout
  float att_dropout_;      // --attention-dropout (the softmax probabilities)
  bool training_ = false;  // the forward being run drops (also when recomputed in backward)
  bool flash_;  // bf16 or fp16 and the head size suits the flash kernels: lse saved, no att
  KernelConfig kernels_;  // --cuda-graphs, --sm90-gemm, ...: made current by Enter
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  bool owns_stream_ = true;  // false: BackendOptions::cuda_stream, another backend's
  BufferPlan plan_;
  std::vector<void*> buffers_;      // per buffer of plan_, its device address
  std::vector<void*> allocations_;  // the own allocations among them (freed at the end)
  size_t allocated_bytes_ = 0;

  float *params_, *grads_, *m_, *v_;
  cuda::bf16* params_h_ = nullptr;   // --bf16 copy of the parameters
  cuda::fp16* params_hf_ = nullptr;  // --fp16 copy
  void refresh_half_params();        // after the fp32 parameters change
  // BufferPlanOptions::split_master (--bf16 without the distributed optimizer): the matmul
  // weights' fp32 masters are (params_h_, params_lo_) halves (kernels/master_split.h); params_
  // holds fp32_ranges_ (every other tensor) and the padding, mapped in whole pages where the
  // driver can (cuda_backend_sparse.cu); the compute reads no other part of it.
  bool split_master_ = false;
  // Element i of split tensor k has its low half at params_lo_[i + lo_shifts_[k]]: packed tensor
  // after tensor in a buffer of their own, or (lo_in_grads_, BackendOptions::
  // one_micro_batch_steps) params_lo_ is grads_ seen as uint16 and each tensor's low halves fill
  // the second half of its gradient's fp32 storage, the first half holding its packed bf16
  // gradient.
  bool lo_in_grads_ = false;
  uint16_t* params_lo_ = nullptr;
  std::vector<std::pair<size_t, size_t>> split_ranges_, fp32_ranges_;
  std::vector<long long> lo_shifts_;
  void set_params_split(const float* host);
  void get_params_split(float* host) const;
  cuda::AdamWSpan* adamw_spans_ = nullptr;  // the model cut into spans: one AdamW launch
  int n_adamw_spans_ = 0;
  // --bf16 with bf16 logits: zero_grad zeroes only the gradients the backward adds to (spans of
  // the biases, LayerNorms and wpe) and sets weight_grads_stale_; the first micro-batch after it
  // then writes the weight matrices' gradients (layer weights, wte) with beta 0 instead of
  // adding to zeros: 0.5 GB (124M) less memset and read per step.
  cuda::AdamWSpan* added_grad_spans_ = nullptr;
  int n_added_grad_spans_ = 0;
  bool weight_grads_stale_ = false;
  std::vector<std::pair<size_t, size_t>> written_grads_;  // [begin, end) of those weight tensors
  // Zeroes the stale weight gradients (a read of the gradients before any forward_backward
  // after zero_grad: they must read as zeros).
  void clear_stale_weight_grads();
  // The first micro-batch after zero_grad writes the layers' weight gradients (qkv, proj, fc,
  // fc2; not wte, which the classifier's chunks and the embedding add to) in bf16, packed into
  // the first half of each tensor's own fp32 storage (cuda::AdamWSpan::grad_bf16): the fp32 sum
  // rounded once, as autocast's weight gradients are, and 2 bytes less per weight for the
  // products to write and for the norm and AdamW to read. A further micro-batch widens them to
  // fp32 first (unpack_weight_grads) and adds as before. --bf16-weight-grads off: fp32 always.
  bool pack_weight_grads_ = false;
  bool weight_grads_packed_ = false;                    // those tensors hold bf16 now
  std::vector<std::pair<size_t, size_t>> packed_grads_;  // [begin, end) of those tensors
  cuda::AdamWSpan* packed_spans_ = nullptr;  // adamw_spans_ with grad_bf16 set on them
  bool packs(size_t offset) const;  // whether the weight gradient at offset is packed
  void unpack_weight_grads();
  // The spans the norm and AdamW read the gradients through (packed or not).
  const cuda::AdamWSpan* grad_spans() const {
    return weight_grads_packed_ ? packed_spans_ : adamw_spans_;
  }
  std::vector<LayerActs> acts_;
  float *encoded_, *lnf_mean_, *lnf_rstd_, *logits_, *losses_, *loss_;
  int classifier_rows_;  // rows per classifier chunk (logits_ holds this many)
  MatIn lnf_;
  float* scratch_c_;  // --fp16: fp32 staging of a half matmul input [B,T,C]
  float *dres_, *dln_, *dfch_gelu_, *dfch_, *datty_, *dqkv_;
  float* dbranch_ = nullptr;  // with dropout: a branch's masked gradient [B,T,C]
  // --bf16 gradient buffers (bf16 roundings of dres_ / dbranch_, and the bf16 matmul gradients)
  // --bf16: a layer's fc2 output (with dropout, its projection's too), until the next LayerNorm
  // adds it
  cuda::bf16* fc2_out_h_ = nullptr;
  cuda::bf16 *dln_h_ = nullptr, *dres_h_ = nullptr, *dbranch_h_ = nullptr, *dfch_h_ = nullptr,
             *datty_h_ = nullptr, *dqkv_h_ = nullptr;
  cuda::bf16* logits_h_ = nullptr;  // --bf16 logits of one classifier chunk (when Vp % 8 == 0)
  // CUDA graph of step_kernels: captured at the second training micro-batch (the first runs
  // eagerly and creates every cuBLAS plan and workspace), replayed after; captured again when
  // loss_weight changes. Unless --cuda-graphs is off; the replay runs the same kernels with the
  // same arguments (dropout keys read from device_dropout_key_), so the bits are those of the
  // eager step.
  bool graphs_ = false;
  uint64_t* device_dropout_key_ = nullptr;  // the micro-batch's dropout key (queue_step stores it)
  // Dropout site `site`'s key as the kernels take it: read from device_dropout_key_ under step
  // graphs, else its value.
  DropKey site_key(uint64_t site) const;
  // Layer l's (of this stage) attention dropout key, as site_key.
  DropKey attention_key(int l) const { return site_key(attention_dropout_site(global_layer(l))); }
  // One graph (and eager warm-up) per kind of micro-batch, key = kind + 2·reduces + 4·gathers:
  // kind 1 the first after zero_grad (weight gradients written), 0 the others (added); reduces:
  // its backward queues the bucket reductions (--overlap-grad-reduce, the step's last); gathers:
  // its forward queues and waits for the parameters' all-gathers (--overlap-param-gather). Those
  // two hold collectives and need the hooks' owner (captured_hooks_), else they run eagerly.
  static constexpr int kStepGraphs = 8;
  bool warmed_up_[kStepGraphs] = {};  // an eager micro-batch has run (plans, autotuning)
  bool graph_refused_[kStepGraphs] = {};  // its capture failed (capture_step): eager
  cudaGraphExec_t step_graph_[kStepGraphs] = {};
  float step_graph_weight_[kStepGraphs] = {};
  int *inputs_, *targets_;
  int *inputs_host_ = nullptr, *targets_host_ = nullptr;  // pinned staging for token uploads
  float* loss_host_ = nullptr;                             // pinned
  // Recorded after the token uploads: the pinned staging may be refilled once it has completed.
  cudaEvent_t tokens_uploaded_ = nullptr;
  // end_step: [0] the step's loss (add_step_loss), [1] the gradients' sum of squares; the
  // decision made from them (AdamW reads it), its pinned copy and the event after that copy.
  double* step_sums_ = nullptr;
  cuda::StepDecision* step_decision_ = nullptr;
  cuda::StepDecision* step_host_ = nullptr;
  cudaEvent_t step_decided_ = nullptr;
  int queued_micro_batches_ = 0;
  size_t flat_padding_ = 0;  // BackendOptions::flat_padding (data parallelism)
  // The moments m_ and v_ hold: everything, or the distributed optimizer's ranges (compact).
  OptimizerShard shard_;
  bool sharded_moments() const { return shard_.size() < layout_.total(); }
  void set_optimizer_shard(const float* m, const float* v);
  void get_optimizer_shard(float* m, float* v) const;
  cuda::bf16* dp_bf16_ = nullptr;  // --grad-reduce-in-bf16 staging (in allocations_)
  size_t dp_bf16_capacity_ = 0;
  // AdamW's spans of a flat range [begin, end), in device memory (allocations_), made once per
  // range: the norm's (flat offsets) and the update's (offsets into the compact moments).
  struct DpSpans {
    cuda::AdamWSpan* dev = nullptr;
    int n = 0;
  };
  std::map<std::tuple<size_t, size_t, bool>, DpSpans> dp_spans_;
  double* dp_sums_ = nullptr;  // the ranges' sums of squares on the device (in allocations_)
  // queue_step_sums' head values: the host's, then back with the decision (pinned).
  double* dp_head_host_ = nullptr;
  size_t dp_head_capacity_ = 0;
  size_t dp_sums_capacity_ = 0;
  const DpSpans& dp_spans(size_t begin, size_t end, bool compact);
  // dp_sums_[slots[i]] = the sum of squares of ranges[i], zeros elsewhere in [0, n).
  void queue_range_sums(const std::vector<std::pair<size_t, size_t>>& ranges,
                        const std::vector<size_t>& slots, size_t n);
  // adamw_range, its factor and flag from step_decision_ when `decided`.
  void queue_adamw_range(const AdamWConfig& c, float lr, int step, float grad_scale, bool decided,
                         size_t begin, size_t end);

  // ---- Tensor and pipeline parallelism (cuda_backend_stage.cu).
  StageSpec stage_;
  bool staged_ = false;  // not the whole model: stage_forward / stage_backward drive it
  int tp_ = 1, tp_rank_ = 0;
  dist::Communicator* tp_comm_ = nullptr;  // its work queued on stream_ (NCCL)
  // This rank's widths: attention (heads · head size), heads, FFN, vocabulary rows and the first.
  int Cl_ = 0, NHl_ = 0, Fl_ = 0, Vl_ = 0, v0_ = 0;
  // --sequence-parallel (tensor parallelism only): outside the TP regions (LayerNorms, dropout,
  // residual adds, the stage boundary) this rank holds rows [row0_, row0_ + rows_) of the
  // [B·T, C] activations; the LayerNorm outputs are all-gathered before the column-parallel
  // products, whose partial sums are reduce-scattered. Without it rows_ = B·T, row0_ = 0.
  bool sp_ = false;
  int rows_ = 0;
  size_t row0_ = 0;
  // Sequence parallelism: the gradients of the replicated tensors (LayerNorms, row-parallel
  // biases, position embedding: ParamLayout::grad_needs_tp_reduce) come from this rank's rows
  // only, so each backward's share is summed over the TP group: held aside (sp_hold_grads), the
  // backward adds to zeros, then the sums are added back (sp_reduce_grads).
  std::vector<std::pair<size_t, size_t>> sp_ranges_;
  float* sp_grads_ = nullptr;  // [2][sp_numel_]: the held gradients, the backward's share
  size_t sp_numel_ = 0;
  void sp_hold_grads();
  void sp_reduce_grads();
  // The activation collectives below move bf16 with --bf16 (tp_sum says why); their fp32
  // overloads then round into bf16 scratch and widen the result back.
  // full [B·T, C] from this rank's rows at full + row0_·C (all-gather in place).
  void gather_rows(float* full);
  void gather_rows(cuda::bf16* full);
  // A partial sum [B·T, C] over the TP group: summed in place (all-reduce), or with sequence
  // parallelism this rank's rows of the sum (reduce-scatter into full + row0_·C). Returns them.
  float* sum_rows(float* full);
  cuda::bf16* sum_rows(cuda::bf16* full);
  // rows = this rank's rows of the sum over the TP group of full [B·T, C] (reduce-scatter).
  void scatter_rows(const float* full, float* rows);
  // LayerNorm of this rank's rows into out [B·T, C] (whole after the all-gather).
  void layernorm_rows(float* out, float* mean, float* rstd, const float* in, size_t w, size_t b);
  // --bf16 with bf16 logits (this rank's vocabulary rows a multiple of 8): the classifier's bf16
  // path, and the weight gradients written by the step's first micro-batch (zero_grad's spans).
  bool bf16_logits_ = false;
  // What a micro-batch keeps for its backward, per pipeline slot (slot 0: the members the
  // whole-model step uses); use_slot points those members at a slot's buffers.
  struct Slot {
    std::vector<LayerActs> acts;
    float* encoded = nullptr;
    MatIn lnf;
    float *lnf_mean = nullptr, *lnf_rstd = nullptr;
    int *inputs = nullptr, *targets = nullptr;
    uint64_t dropout_key = 0;
  };
  std::vector<Slot> slots_;
  std::vector<void*> stage_buffers_;
  // Construction: the stage, the TP group and this rank's widths (before the buffer plan).
  void init_parallel(const BackendOptions& options);
  // Puts the TP communicator's work on stream_ (Enter does, at every call: with the interleaved
  // schedule several backends of one rank share the communicator).
  void use_tp_stream() const;
  // For attention_path(): "; CUDA graphs off (...)" where the options would have them on.
  std::string parallel_note() const;
  int global_layer(int l) const { return stage_.first_layer + l; }  // dropout sites and keys
  void use_slot(int s);
  // The stage's ends: what enters the first layer (the embedding, or act_in widened to fp32)
  // and what leaves the last one; the backward's start (the loss, or dact_out) and end.
  const void* act_in_ = nullptr;
  void* act_out_ = nullptr;
  const void* dact_out_ = nullptr;
  void* dact_in_ = nullptr;
  void stage_input();                       // encoded_ from act_in_
  void stage_output(const float* residual);  // act_out_ from the last layer's output
  void embedding_forward();
  void embedding_backward(const float* dout);
  // The gradient of this stage's output loaded into dres_ (and dres_h_ with --bf16).
  void load_stage_grad();
  void store_stage_grad();  // dact_in_ from dres_
  // x[0:n] summed over the TP group (on stream_): the row-parallel products' partial sums (their
  // bias added by TP rank 0 only), the column-parallel products' input gradients. In bf16 on
  // the wire with --bf16 (the fp32 overload rounds first), else fp32.
  void tp_sum(float* x, size_t n);
  void tp_sum(cuda::bf16* x, size_t n);
  // The cross-entropy of one classifier chunk of logits [rows, Vl_] (fp32 or bf16): losses and,
  // with dlogits, the gradient in place; vocabulary-parallel under tensor parallelism.
  void cross_entropy(float* logits, int r0, int rows, bool backward, float loss_weight);
  void cross_entropy(cuda::bf16* logits, int r0, int rows, bool backward, float loss_weight);
  // The gradient norm of ParamLayout::counts_in_norm's tensors, over the TP group (replicated
  // tensors counted once; a last stage's tied word embedding left to the first stage).
  double tp_grad_norm();
  // BackendOptions::shard_master (cuda_backend_sparse.cu): params_ is a reserved address range
  // with device memory mapped only under this rank's owned ranges, the padding and the tensors
  // the bf16 compute reads in fp32 (all but the layers' four matmul weights, which it reads from
  // params_h_), in whole pages. Nothing reads params_ anywhere else.
  struct SparseParams {
    void* base = nullptr;
    size_t reserved = 0, page = 0;  // bytes
    std::vector<std::pair<size_t, size_t>> runs;  // mapped [begin, end), elements, ascending
    struct Map {
      size_t offset, size;  // bytes
      unsigned long long handle;
    };
    std::vector<Map> maps;  // one per run
    unsigned char* page_mapped = nullptr;  // device: 1 per mapped page (in allocations_)
    ~SparseParams();
  };
  SparseParams sparse_;
  bool want_sparse_ = false;  // shard_master asked, with --bf16 and a shard; or split_master_
  static bool can_map_sparse();  // the driver has the virtual memory functions
  void* map_sparse_params(size_t bytes);  // allocate()'s "params"
  void set_params_sparse(const float* host);
  void get_params_sparse(float* host) const;
  void refresh_sparse_half();  // refresh_half_params: zeros, then the mapped runs
  // (declared after sparse_: destroyed first, waiting for the collectives that use params_)
  // Overlapped data parallelism (cuda_backend_dist.cu): the communication stream and its events,
  // made at the first use, destroyed with the backend.
  struct CommStream {
    cudaStream_t stream = nullptr;
    cudaEvent_t compute_done = nullptr, comm_done = nullptr;
    std::vector<cudaEvent_t> marks;  // mark_comm's
    ~CommStream();
  };
  CommStream comm_;
  void sync_comm() const;  // host reads of the parameters wait for pending all-gathers
  // --overlap-grad-reduce: [packed_from_, ...) of the packed weight gradients are widened.
  size_t packed_from_ = ~size_t(0);
  float* dp_staging_ = nullptr;  // gather_staging (in allocations_)
  size_t dp_staging_capacity_ = 0;
};

}  // namespace gpt
