#include "train/plan/gpu_profile.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <sstream>

#include "common/cli/error.h"

namespace plan {
namespace {

// Dense bf16 tensor-core peaks and memory bandwidths as the vendors publish them.
const std::array<GpuSpec, 7> kSpecs = {{
    {"A10", 24, 125, 600},
    {"RTX3090", 24, 71, 936},
    {"A100-40GB", 40, 312, 1555},
    {"A100-80GB", 80, 312, 2039},
    {"H100", 80, 989, 3350},
    {"H200", 141, 989, 4800},
    {"V100", 32, 125, 900},
}};

std::string folded(const std::string& s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(c));
  return out;
}

double number(simdjson::dom::object o, const char* key, const std::string& path, const std::string& where,
              double fallback = NAN) {
  simdjson::dom::element e;
  if (o[key].get(e)) {
    if (!std::isnan(fallback)) return fallback;
    throw suite::ToolError(path, where + ": missing \"" + key + "\"");
  }
  double d;
  int64_t i;
  if (!e.get_double().get(d)) return d;
  if (!e.get_int64().get(i)) return double(i);
  throw suite::ToolError(path, where + ": \"" + key + "\" is not a number");
}

PartTimes part(simdjson::dom::object o, const char* key, const std::string& path, const std::string& where) {
  simdjson::dom::object p;
  if (o[key].get_object().get(p)) throw suite::ToolError(path, where + ": missing object \"" + key + "\"");
  PartTimes t{number(p, "forward-ms", path, where + "." + key), number(p, "backward-ms", path, where + "." + key)};
  if (!(t.forward_ms >= 0) || !(t.backward_ms >= 0))
    throw suite::ToolError(path, where + "." + key + ": times must be non-negative");
  return t;
}

}  // namespace

const GpuSpec* find_gpu_spec(const std::string& name) {
  for (const GpuSpec& s : kSpecs)
    if (folded(s.name) == folded(name)) return &s;
  return nullptr;
}

std::string known_gpu_specs() {
  std::string out;
  for (const GpuSpec& s : kSpecs) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

bool same_gpu_type(const std::string& a, const std::string& b) { return folded(a) == folded(b); }

GpuProfile GpuProfile::measured(std::string gpu, std::string source, std::vector<ProfileEntry> entries) {
  GpuProfile p;
  p.gpu = std::move(gpu);
  p.source = std::move(source);
  p.entries = std::move(entries);
  if (const GpuSpec* s = find_gpu_spec(p.gpu)) p.memory_gbs = s->memory_gbs;
  return p;
}

GpuProfile GpuProfile::from_spec(const GpuSpec& spec, double efficiency) {
  GpuProfile p;
  p.gpu = spec.name;
  std::ostringstream o;
  o << "analytic: " << spec.peak_tflops << " TFLOP/s x " << efficiency << ", " << spec.memory_gbs << " GB/s";
  p.source = o.str();
  p.memory_gib = spec.memory_gib;
  p.memory_gbs = spec.memory_gbs;
  p.spec_ = spec;
  p.efficiency_ = efficiency;
  return p;
}

std::vector<int> GpuProfile::micro_batches(int tp, int limit) const {
  std::vector<int> out;
  if (spec_) {
    for (int b = 1; b <= limit; b *= 2) out.push_back(b);
    return out;
  }
  for (const ProfileEntry& e : entries)
    if (e.tp == tp && e.micro_batch <= limit) out.push_back(e.micro_batch);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<ProfileEntry> GpuProfile::entry(const ModelShape& m, int b, int tp) const {
  if (!spec_) {
    for (const ProfileEntry& e : entries)
      if (e.micro_batch == b && e.tp == tp) return e;
    return std::nullopt;
  }
  // Every FLOP of the forward and backward (the matrix products and attention; the element-wise
  // work rides along, fused) at `efficiency_` of the peak, i.e. the model-FLOP utilisation the GPU
  // reaches; backward twice the forward. The embedding is a gather of the word and position rows,
  // its backward an add into fp32 gradients: memory bound, at 70% of the bandwidth.
  const double tokens = double(b) * m.seq, elem = m.bf16 ? 2 : 4;
  const double flops = spec_->peak_tflops * 1e12 * efficiency_ / 1e3;  // per ms
  const double bytes = spec_->memory_gbs * 1e9 * 0.7 / 1e3;             // per ms
  ProfileEntry e;
  e.micro_batch = b;
  e.tp = tp;
  const double layer = tokens * m.layer_forward_flops() / tp / flops;
  e.layer = {layer, 2 * layer};
  const double head = tokens * m.head_forward_flops(tp) / flops;
  e.head = {head, 2 * head};
  e.embedding = {tokens * m.hidden * elem * 3 / bytes, tokens * m.hidden * 4 * 3 / bytes};
  e.note = source;
  return e;
}

GpuProfile load_profile(const std::string& path, const ModelShape& model) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(path).get(doc)) {
    if (err == simdjson::IO_ERROR) throw suite::ToolError(path, "cannot read");
    throw suite::ToolError(path, std::string("not valid JSON: ") + simdjson::error_message(err));
  }
  simdjson::dom::object root;
  if (doc.get_object().get(root)) throw suite::ToolError(path, "not a JSON object");
  std::string_view format, gpu;
  if (root["format"].get_string().get(format) || format != "gpt-layer-profile")
    throw suite::ToolError(path, "not a layer profile (\"format\": \"gpt-layer-profile\" missing)");
  if (root["gpu"].get_string().get(gpu) || gpu.empty()) throw suite::ToolError(path, "missing \"gpu\" (the GPU type)");
  simdjson::dom::object mo;
  if (root["model"].get_object().get(mo)) throw suite::ToolError(path, "missing object \"model\"");
  const std::pair<const char*, int> checks[] = {{"hidden-size", model.hidden},
                                                {"num-attention-heads", model.heads},
                                                {"ffn-hidden-size", model.ffn},
                                                {"seq-length", model.seq},
                                                {"vocab-size", model.vocab}};
  for (auto [key, want] : checks) {
    const double got = number(mo, key, path, "model");
    if (got != want)
      throw suite::ToolError(path, std::string("profiled with ") + key + " " + std::to_string(int64_t(got)) +
                                       ", the model " + model.name + " has " + std::to_string(want));
  }
  std::string_view precision = "bf16";
  if (mo["precision"].get_string().get(precision)) precision = "bf16";
  if ((precision == "fp32") == model.bf16)
    throw suite::ToolError(path, "profiled in " + std::string(precision) + ", the model " + model.name + " trains in " +
                                     (model.bf16 ? "bf16" : "fp32"));
  simdjson::dom::array entries;
  if (root["entries"].get_array().get(entries)) throw suite::ToolError(path, "missing array \"entries\"");
  std::vector<ProfileEntry> out;
  size_t k = 0;
  for (simdjson::dom::element el : entries) {
    const std::string where = "entries[" + std::to_string(k++) + "]";
    simdjson::dom::object o;
    if (el.get_object().get(o)) throw suite::ToolError(path, where + ": not an object");
    ProfileEntry e;
    const double b = number(o, "micro-batch-size", path, where), t = number(o, "tensor-model-parallel-size", path, where);
    if (b < 1 || t < 1 || b != std::floor(b) || t != std::floor(t))
      throw suite::ToolError(path, where + ": micro-batch and tensor-parallel sizes must be positive integers");
    e.micro_batch = int(b);
    e.tp = int(t);
    e.embedding = part(o, "embedding", path, where);
    e.layer = part(o, "layer", path, where);
    e.head = part(o, "output-layer", path, where);
    e.layer_activation_bytes = number(o, "layer-activation-bytes", path, where, -1);
    e.layer_activation_bytes_recompute = number(o, "layer-activation-bytes-recompute", path, where, -1);
    e.layer_weight_bytes = number(o, "layer-weight-bytes", path, where, -1);
    bool inc = false;
    if (o["includes-tp-communication"].get_bool().get(inc)) inc = false;
    e.includes_tp_communication = inc;
    e.note = "measured (" + path + ")";
    for (const ProfileEntry& prev : out)
      if (prev.micro_batch == e.micro_batch && prev.tp == e.tp)
        throw suite::ToolError(path, where + ": a second entry for micro-batch " + std::to_string(e.micro_batch) +
                                         " and tensor-parallel size " + std::to_string(e.tp));
    out.push_back(e);
  }
  if (out.empty()) throw suite::ToolError(path, "\"entries\" is empty");
  GpuProfile p = GpuProfile::measured(std::string(gpu), path, std::move(out));
  p.memory_gib = number(root, "memory-gib", path, "profile", 0);
  p.optimizer_ms_per_gparam = number(root, "optimizer-ms-per-billion-parameters", path, "profile", -1);
  return p;
}

}  // namespace plan
