#include "train/loop/stage_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <utility>

#include "common/cli/error.h"

namespace gpt {

#ifdef GPT_HAVE_CUDA
std::unique_ptr<PassClock> make_event_clock(void* stream);  // stage_report_cuda.cu
#endif

namespace {

class WallClock final : public PassClock {
 public:
  void begin() override { t0_ = std::chrono::steady_clock::now(); }
  void end(bool backward) override {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
    (backward ? t_.backward_ms : t_.forward_ms) += ms;
    ++(backward ? t_.backwards : t_.forwards);
  }
  Totals take() override { return std::exchange(t_, Totals{}); }

 private:
  std::chrono::steady_clock::time_point t0_;
  Totals t_;
};

enum Field {
  kPresent, kStage, kFirst, kLayers, kEmbedding, kHead, kParams, kMemory, kForward, kBackward,
  kCompute
};

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

}  // namespace

std::unique_ptr<PassClock> make_wall_clock() { return std::make_unique<WallClock>(); }

std::unique_ptr<PassClock> make_pass_clock(void* stream) {
#ifdef GPT_HAVE_CUDA
  if (stream) return make_event_clock(stream);
#endif
  return make_wall_clock();
}

std::vector<double> stage_exchange(const StageFigures& f, int rank, int world_size,
                                   int64_t iterations) {
  std::vector<double> v(size_t(world_size) * kStageFields, 0.0);
  double* r = v.data() + size_t(rank) * kStageFields;
  const PassClock::Totals& p = f.passes;
  r[kPresent] = 1;
  r[kStage] = f.stage;
  r[kFirst] = f.first_layer;
  r[kLayers] = f.num_layers;
  r[kEmbedding] = f.embedding;
  r[kHead] = f.head;
  r[kParams] = f.parameters;
  r[kMemory] = f.max_allocated_mb;
  r[kForward] = p.forwards ? p.forward_ms / double(p.forwards) : 0;
  r[kBackward] = p.backwards ? p.backward_ms / double(p.backwards) : 0;
  r[kCompute] = iterations > 0 ? (p.forward_ms + p.backward_ms) / double(iterations) : 0;
  return v;
}

double measured_bubble(const std::vector<double>& stage_compute_ms, double step_ms) {
  if (stage_compute_ms.empty() || step_ms <= 0) return 0;
  double sum = 0;
  for (double c : stage_compute_ms) sum += c;
  return std::clamp(1.0 - sum / (double(stage_compute_ms.size()) * step_ms), 0.0, 1.0);
}

StageReport stage_report(const std::vector<double>& all, int pipeline, int tensor_size,
                         double step_ms, int micro_batches) {
  if (all.size() % kStageFields != 0 || pipeline < 1 || tensor_size < 1)
    throw suite::ToolError("stage report: " + std::to_string(all.size()) +
                           " values for " + std::to_string(kStageFields) +
                           " per rank (an internal error)");
  StageReport r;
  r.stages.assign(size_t(pipeline), StageRow{});
  r.step_ms = step_ms;
  r.micro_batches = micro_batches;
  std::vector<int> ranks(size_t(pipeline), 0);
  for (size_t i = 0; i < all.size(); i += kStageFields) {
    const double* f = all.data() + i;
    if (f[kPresent] == 0) continue;
    const int s = int(f[kStage]);
    if (s < 0 || s >= pipeline)
      throw suite::ToolError("stage report: rank " + std::to_string(i / kStageFields) +
                             " names stage " + std::to_string(s) + " of " +
                             std::to_string(pipeline) + " (an internal error)");
    StageRow& row = r.stages[size_t(s)];
    row.first_layer = int(f[kFirst]);
    row.num_layers = int(f[kLayers]);
    row.embedding = f[kEmbedding] != 0;
    row.head = f[kHead] != 0;
    row.parameters += f[kParams];
    row.max_allocated_mb = std::max(row.max_allocated_mb, f[kMemory]);
    row.forward_ms += f[kForward];
    row.backward_ms += f[kBackward];
    row.compute_ms += f[kCompute];
    ++ranks[size_t(s)];
  }
  std::vector<double> compute;
  for (int s = 0; s < pipeline; ++s) {
    StageRow& row = r.stages[size_t(s)];
    const int n = ranks[size_t(s)];
    if (n > 0) {
      // Every data-parallel copy holds the whole stage: its parameters once.
      row.parameters /= std::max(1.0, double(n) / tensor_size);
      row.forward_ms /= n;
      row.backward_ms /= n;
      row.compute_ms /= n;
    }
    compute.push_back(row.compute_ms);
  }
  r.bubble = measured_bubble(compute, step_ms);
  r.ideal_bubble = double(pipeline - 1) / double(micro_batches + pipeline - 1);
  return r;
}

std::vector<std::string> format_stage_report(const StageReport& r, int64_t iteration) {
  std::vector<std::string> out;
  const int P = int(r.stages.size());
  for (int s = 0; s < P; ++s) {
    const StageRow& row = r.stages[size_t(s)];
    std::ostringstream o;
    o << " [pipeline stage " << s << "] after iteration " << iteration << ": layers ";
    if (row.num_layers > 0 && row.first_layer < 0)
      o << "in interleaved chunks";
    else if (row.num_layers > 0)
      o << row.first_layer << "-" << row.first_layer + row.num_layers - 1;
    else
      o << "none";
    o << " (" << row.num_layers << (row.embedding ? ", embedding" : "")
      << (row.head ? ", output layer and loss" : "") << ") | parameters: "
      << int64_t(row.parameters + 0.5) << " | max allocated (MB): "
      << fixed(row.max_allocated_mb, 2) << " | forward (ms per micro-batch): "
      << fixed(row.forward_ms, 2) << " | backward (ms per micro-batch): "
      << fixed(row.backward_ms, 2) << " | compute (ms per iteration): " << fixed(row.compute_ms, 2);
    out.push_back(o.str());
  }
  std::ostringstream b;
  b << " [pipeline] after iteration " << iteration << ": measured bubble: "
    << fixed(100 * r.bubble, 1) << "% (1 - sum of " << P << " stages' compute / (" << P
    << " x " << fixed(r.step_ms, 2) << " ms per iteration)) | 1F1B ideal (P-1)/(m+P-1) with m = "
    << r.micro_batches << ": " << fixed(100 * r.ideal_bubble, 1) << "%";
  out.push_back(b.str());
  return out;
}

std::string stage_report_json(const StageReport& r, int my_stage) {
  std::ostringstream j;
  j.precision(9);
  if (my_stage >= 0 && my_stage < int(r.stages.size())) {
    const StageRow& m = r.stages[size_t(my_stage)];
    j << ",\"stage\":" << my_stage << ",\"stage_forward_ms\":" << m.forward_ms
      << ",\"stage_backward_ms\":" << m.backward_ms;
  }
  j << ",\"pipeline_bubble\":" << r.bubble << ",\"stages\":[";
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const StageRow& row = r.stages[s];
    j << (s ? "," : "") << "{\"first_layer\":" << row.first_layer
      << ",\"num_layers\":" << row.num_layers << ",\"embedding\":"
      << (row.embedding ? "true" : "false") << ",\"head\":" << (row.head ? "true" : "false")
      << ",\"parameters\":" << int64_t(row.parameters + 0.5)
      << ",\"max_allocated_mb\":" << row.max_allocated_mb << ",\"forward_ms\":" << row.forward_ms
      << ",\"backward_ms\":" << row.backward_ms << ",\"compute_ms\":" << row.compute_ms << "}";
  }
  j << "]";
  return j.str();
}

}  // namespace gpt
