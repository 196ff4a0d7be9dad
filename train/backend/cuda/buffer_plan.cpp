#include "train/backend/cuda/buffer_plan.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "kernels/adamw_spans.h"
#include "kernels/step_decision.h"
#include "train/model/layout.h"

namespace gpt {
namespace {

constexpr size_t kCarveAlign = 256;

// The table being filled: one line per buffer, in allocation order.
class Planner {
 public:
  // n elements of elem bytes (cudaMalloc of at least one element).
  void add(std::string name, BufferKind kind, size_t n, size_t elem) {
    plan.buffers.push_back({std::move(name), kind, std::max<size_t>(n, 1) * elem, ""});
  }
  // Carved from `room` when it has space left after the buffers carved before, else its own.
  void add_in(const std::string& room, std::string name, BufferKind kind, size_t n, size_t elem) {
    const PlannedBuffer* r = plan.find(room);
    const size_t start = (room_used_ + kCarveAlign - 1) & ~(kCarveAlign - 1),
                 end = start + n * elem;
    if (r && end <= r->bytes) {
      room_used_ = end;
      plan.buffers.push_back({std::move(name), kind, n * elem, room});
    } else {
      add(std::move(name), kind, n, elem);
    }
  }
  BufferPlan plan;

 private:
  size_t room_used_ = 0;  // one room per plan (the logits)
};

}  // namespace

size_t BufferPlan::bytes(BufferKind k) const {
  size_t sum = 0;
  for (const PlannedBuffer& b : buffers)
    if (b.kind == k && b.lives_in.empty()) sum += b.bytes;
  return sum;
}

size_t BufferPlan::total_bytes() const {
  size_t sum = 0;
  for (const PlannedBuffer& b : buffers)
    if (b.lives_in.empty()) sum += b.bytes;
  return sum;
}

const PlannedBuffer* BufferPlan::find(const std::string& name) const {
  for (const PlannedBuffer& b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<size_t> carve_offsets(const BufferPlan& plan) {
  std::vector<size_t> offsets(plan.buffers.size(), 0);
  std::vector<std::pair<std::string, size_t>> used;  // per room, the bytes carved so far
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlannedBuffer& b = plan.buffers[i];
    if (b.lives_in.empty()) continue;
    auto it =
        std::find_if(used.begin(), used.end(), [&](auto& u) { return u.first == b.lives_in; });
    if (it == used.end()) it = used.insert(used.end(), {b.lives_in, 0});
    offsets[i] = (it->second + kCarveAlign - 1) & ~(kCarveAlign - 1);
    it->second = offsets[i] + b.bytes;
  }
  return offsets;
}

std::vector<std::pair<size_t, size_t>> split_master_tensors(const ParamLayout& layout) {
  std::vector<size_t> matmul;
  for (int l = 0; l < layout.num_layers(); ++l) {
    const LayerOffsets& o = layout.layer(l);
    matmul.insert(matmul.end(), {o.qkv_w, o.proj_w, o.fc_w, o.fc2_w});
  }
  std::vector<std::pair<size_t, size_t>> out;
  for (const TensorInfo& t : layout.tensors())
    if (std::find(matmul.begin(), matmul.end(), t.offset) != matmul.end())
      out.push_back({t.offset, t.offset + t.numel});
  return out;
}

std::vector<std::pair<size_t, size_t>> fp32_read_tensors(const ParamLayout& layout) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t at = 0;
  for (const auto& [begin, end] : split_master_tensors(layout)) {
    if (at < begin) out.push_back({at, begin});
    at = end;
  }
  if (at < layout.total()) out.push_back({at, layout.total()});
  return out;
}

// The sizes and aliasing rules of every buffer (CudaBackend's members in brackets).
BufferPlan plan_buffers(const ModelConfig& cfg, size_t n, const BufferPlanOptions& o) {
  using K = BufferKind;
  const bool bf16 = o.bf16, fp16 = o.fp16 && !o.bf16, half = bf16 || fp16;
  const size_t B = size_t(std::max(o.micro_batch, 0)), T = size_t(cfg.seq_length);
  // Tensor parallelism: a rank's heads (Cl = C/tp attention width), FFN columns and vocabulary
  // rows; the residual stream and LayerNorms stay whole.
  const size_t tp = size_t(std::max(o.stage.tp_size, 1));
  const size_t BT = B * T, C = cfg.hidden_size, F = cfg.ffn_hidden_size / tp,
               NH = cfg.num_heads / tp, Cl = C / tp, Vl = size_t(cfg.padded_vocab_size) / tp;
  const ParamLayout layout(cfg, o.stage);
  const int L = layout.num_layers();
  // --sequence-parallel: the residual stream, the LayerNorm statistics and their gradients hold
  // this rank's rows R only; the LayerNorm outputs (gathered) and the products hold all B·T.
  const bool sp = o.stage.sequence_parallel && tp > 1;
  const size_t R = sp ? BT / tp : BT;
  const bool head = o.stage.has_head;
  const size_t f4 = 4, h2 = 2, matin = half ? 2 : 4;  // a matmul input: fp32, or bf16 / fp16
  Planner p;
  // Parameters, gradients and AdamW moments, fp32; the half copy of the parameters.
  const size_t flat = n + o.flat_padding;
  const size_t moments = o.optimizer_elements ? o.optimizer_elements : flat;
  // Split masters: fp32 only outside the matmul weights, mapped in whole 2 MiB pages (about
  // 4 of them per layer hold the small tensors between its matmul weights).
  size_t split = 0;
  if (bf16 && o.split_master)
    for (const auto& [begin, end] : split_master_tensors(layout)) split += end - begin;
  const size_t page_slack = split ? size_t(L) * 4 * (size_t(2) << 20) : 0;
  p.add("params", K::kWeights, (flat - split) + page_slack / f4, f4);
  p.add("grads", K::kGradients, flat, f4);
  p.add("adam_m", K::kOptimizer, moments, f4);
  p.add("adam_v", K::kOptimizer, moments, f4);
  if (bf16) p.add("params_bf16", K::kWeights, n, h2);
  if (split && !o.lo_in_grads) p.add("params_lo", K::kWeights, split, h2);  // tensor after tensor
  if (fp16) p.add("params_fp16", K::kWeights, n, h2);
  // --bf16: the layers that recompute their GELU output in backward share one buffer for it.
  const int gelu_recomputed = o.recompute_activations || o.recompute_gelu_layers < 0
                                  ? L
                                  : std::min(L, o.recompute_gelu_layers);
  if (bf16 && gelu_recomputed > 0) p.add("gelu_shared", K::kActivations, BT * F, h2);
  // Each layer's saved activations (LayerActs); with recompute one slot (layer0) that every
  // layer shares, and each layer's output res3 of its own.
  auto slot = [&](const std::string& s, int l) {
    p.add(s + "ln1", K::kActivations, BT * C, matin);
    p.add(s + "ln1_mean", K::kActivations, R, f4);
    p.add(s + "ln1_rstd", K::kActivations, R, f4);
    p.add(s + "qkv", K::kActivations, BT * 3 * Cl, bf16 ? h2 : f4);
    if (o.flash_attention)
      p.add(s + "lse", K::kActivations, B * NH * T, f4);
    else
      p.add(s + "att", K::kActivations, B * NH * T * T, f4);
    p.add(s + "atty", K::kActivations, BT * Cl, matin);
    p.add(s + "res2", K::kActivations, R * C, f4);
    p.add(s + "ln2", K::kActivations, BT * C, matin);
    p.add(s + "ln2_mean", K::kActivations, R, f4);
    p.add(s + "ln2_rstd", K::kActivations, R, f4);
    if (bf16) {
      p.add(s + "fch", K::kActivations, BT * F, h2);
      if (l >= gelu_recomputed) p.add(s + "fch_gelu", K::kActivations, BT * F, h2);
    } else {
      p.add(s + "fch", K::kActivations, BT * F, f4);
      p.add(s + "fch_gelu", K::kActivations, BT * F, matin);
    }
    p.add(s + "res3", K::kActivations, R * C, f4);
  };
  // prefix "": the first micro-batch slot (the only one without pipelining).
  auto layers = [&](const std::string& prefix) {
    const auto name = [&](int l) { return prefix + "layer" + std::to_string(l) + "."; };
    if (o.recompute_activations) {
      if (prefix.empty())
        slot(name(0), 0);
      else if (L > 0)
        p.add(name(0) + "res3", K::kActivations, R * C, f4);
      for (int l = 1; l < L; ++l) p.add(name(l) + "res3", K::kActivations, R * C, f4);
    } else {
      for (int l = 0; l < L; ++l) slot(name(l), l);
    }
  };
  // The stage's input (the embedding's output, or the previous stage's activation in fp32) and
  // the final LayerNorm's output and statistics.
  auto ends = [&](const std::string& prefix) {
    p.add(prefix + "encoded", K::kActivations, R * C, f4);
    if (!head) return;
    p.add(prefix + "lnf", K::kActivations, BT * C, matin);
    p.add(prefix + "lnf_mean", K::kActivations, R, f4);
    p.add(prefix + "lnf_rstd", K::kActivations, R, f4);
  };
  layers("");
  ends("");
  // The output layer's logits for classifier_rows rows at a time: bf16 with --bf16 when the
  // padded vocabulary (this rank's rows of it) is a multiple of 8, else fp32.
  const size_t rows = std::min<size_t>(BT, size_t(std::max(1, o.classifier_rows)));
  const size_t logits_n = rows * Vl;
  const bool logits_bf16 = bf16 && Vl % 8 == 0;
  if (head) {
    p.add(logits_bf16 ? "logits_bf16" : "logits", K::kWorkspace, logits_n, logits_bf16 ? h2 : f4);
    p.add("losses", K::kActivations, BT, f4);
  }
  p.add("loss", K::kWorkspace, 1, f4);
  if (fp16) p.add("scratch_c", K::kWorkspace, BT * C, f4);  // fp32 staging of a half input
  // The backward's gradients. --bf16: the LayerNorm input gradients are bf16 (dln_bf16, also
  // where the tensor-parallel ranks sum them); the fp32 dln only carries the output layer's
  // gradient when its logits are fp32. The gradients
  // that only the layers' backward uses live after the classifier is done with its bf16 logits,
  // so they take room in that buffer where it has some, in this order, and their own otherwise.
  if (!bf16 || !logits_bf16) p.add("dln", K::kActivations, BT * C, f4);
  if (bf16) {
    p.add_in("logits_bf16", "dfch_bf16", K::kActivations, BT * F, h2);
    p.add_in("logits_bf16", "dqkv_bf16", K::kActivations, BT * 3 * Cl, h2);
    p.add_in("logits_bf16", "dres", K::kActivations, R * C, f4);
    p.add_in("logits_bf16", "datty_bf16", K::kActivations, BT * Cl, h2);
    p.add_in("logits_bf16", "dres_bf16", K::kActivations, R * C, h2);
    if (o.hidden_dropout > 0) p.add_in("logits_bf16", "dbranch_bf16", K::kActivations, R * C, h2);
    p.add("dln_bf16", K::kActivations, BT * C, h2);  // the classifier writes it
    p.add("fc2_out_bf16", K::kActivations, BT * C, h2);
  } else {
    p.add("dres", K::kActivations, R * C, f4);
    p.add("dfch_gelu", K::kActivations, BT * F, f4);
    p.add("dfch", K::kActivations, BT * F, f4);
    p.add("datty", K::kActivations, BT * Cl, f4);
    p.add("dqkv", K::kActivations, BT * 3 * Cl, f4);
  }
  if (o.hidden_dropout > 0) p.add("dbranch", K::kActivations, R * C, f4);
  p.add("inputs", K::kActivations, BT, sizeof(int));
  p.add("targets", K::kActivations, BT, sizeof(int));
  // The device's end of a step: the loss and the gradients' sum of squares, the decision.
  p.add("step_sums", K::kWorkspace, 2, sizeof(double));
  p.add("step_decision", K::kWorkspace, 1, sizeof(cuda::StepDecision));
  // The micro-batch's dropout key, which a step graph's kernels read (CudaBackend::site_key).
  p.add("dropout_key", K::kWorkspace, 1, sizeof(uint64_t));
  // The AdamW span tables: every tensor; with packed weight gradients the same with grad_bf16
  // set; the tensors whose gradients are only added to (--bf16 with bf16 logits).
  size_t spans = 0;
  for (const TensorInfo& t : layout.tensors())
    spans += (t.numel + cuda::kAdamWSpan - 1) / cuda::kAdamWSpan;
  p.add("adamw_spans", K::kOptimizer, spans, sizeof(cuda::AdamWSpan));
  if (bf16 && logits_bf16) {
    // The word embedding's gradient is written by the output layer (the last stage); the first
    // stage's embedding only adds to it.
    const bool wte_written = head && layout.has_wte();
    std::vector<size_t> written;
    if (wte_written) written.push_back(layout.wte());
    for (int l = 0; l < L; ++l) {
      const LayerOffsets& lo = layout.layer(l);
      written.insert(written.end(), {lo.qkv_w, lo.proj_w, lo.fc_w, lo.fc2_w});
    }
    bool packed = false;
    size_t added_spans = 0;
    for (const TensorInfo& t : layout.tensors()) {
      const bool is_written = std::find(written.begin(), written.end(), t.offset) != written.end();
      const bool is_wte = layout.has_wte() && t.offset == layout.wte();
      if (!is_written)
        added_spans += (t.numel + cuda::kAdamWSpan - 1) / cuda::kAdamWSpan;
      else if (o.pack_weight_grads && !is_wte && t.offset % 4 == 0)
        packed = true;
    }
    if (packed) p.add("packed_spans", K::kOptimizer, spans, sizeof(cuda::AdamWSpan));
    if (added_spans) p.add("added_grad_spans", K::kOptimizer, added_spans, sizeof(cuda::AdamWSpan));
  }
  // Pipelining: the other slots' activations, and the stage boundary buffers.
  for (int s = 1; s < o.slots; ++s) {
    const std::string prefix = "slot" + std::to_string(s) + ".";
    layers(prefix);
    ends(prefix);
    p.add(prefix + "inputs", K::kActivations, BT, sizeof(int));
    p.add(prefix + "targets", K::kActivations, BT, sizeof(int));
  }
  for (int i = 0; i < o.stage_buffers; ++i)
    p.add("stage" + std::to_string(i), K::kActivations, R * C, bf16 ? h2 : f4);
  // Sequence parallelism: the replicated tensors' gradients held aside during a backward, and
  // that backward's share of them (summed over the TP group).
  if (sp) {
    size_t held = 0;
    for (const TensorInfo& t : layout.tensors())
      if (layout.grad_needs_tp_reduce(t)) held += t.numel;
    p.add("sp_grads", K::kWorkspace, 2 * held, f4);
  }
  return std::move(p.plan);
}

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::kWeights:
      return "weights";
    case BufferKind::kGradients:
      return "gradients";
    case BufferKind::kOptimizer:
      return "optimizer state";
    case BufferKind::kActivations:
      return "activations";
    case BufferKind::kWorkspace:
      return "workspace";
  }
  return "?";
}

namespace {

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MiB", double(bytes) / (1 << 20));
  return buf;
}

}  // namespace

std::string out_of_memory_message(const BufferPlan& plan, size_t free_bytes,
                                  const std::string& failed, const BufferPlanOptions& o) {
  using K = BufferKind;
  const size_t state =
      plan.bytes(K::kWeights) + plan.bytes(K::kGradients) + plan.bytes(K::kOptimizer);
  std::string m = "cuda backend: out of device memory";
  if (!failed.empty()) m += " allocating " + failed;
  m += ": the model needs " + mib(plan.total_bytes()) + " (";
  bool first = true;
  for (K k : {K::kWeights, K::kGradients, K::kOptimizer, K::kActivations, K::kWorkspace}) {
    m += std::string(first ? "" : ", ") + buffer_kind_name(k) + " " + mib(plan.bytes(k));
    first = false;
  }
  m += ") and the card had " + mib(free_bytes) + " free; ";
  if (state >= free_bytes) {
    m += "weights, gradients and optimizer state alone (" + mib(state) +
         ") exceed it, so no micro-batch size helps: train a smaller model or use a card with "
         "more memory";
  } else {
    m += "the activations and workspace must fit in the " + mib(free_bytes - state) +
         " left beside the model state: lower --micro-batch-size (now " +
         std::to_string(o.micro_batch) + ")";
    if (!o.recompute_activations) m += ", use --recompute-activations";
    if (o.bf16 && !o.recompute_activations && o.recompute_gelu_layers >= 0)
      m += ", let more layers recompute their GELU output (--recompute-gelu-layers)";
    m += " or lower --classifier-rows (now " + std::to_string(o.classifier_rows) + ")";
  }
  return m;
}

}  // namespace gpt
