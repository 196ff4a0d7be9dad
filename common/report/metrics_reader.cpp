// gpt-train metrics files: {"type":"config",...} then "train" and "validation" records.
#include <simdjson.h>

#include <fstream>
#include <utility>

#include "common/cli/error.h"
#include "common/report/readers.h"

namespace suite::report {
namespace {

double number(simdjson::dom::object o, const char* key) {
  simdjson::dom::element e;
  if (o[key].get(e)) return kUnknown;
  double d;
  if (!e.get_double().get(d)) return d;
  int64_t i;
  if (!e.get_int64().get(i)) return double(i);
  uint64_t u;
  if (!e.get_uint64().get(u)) return double(u);
  return kUnknown;  // null or not a number
}

std::string text(simdjson::dom::object o, const char* key) {
  std::string_view s;
  if (!o[key].get_string().get(s)) return std::string(s);
  return "";
}

std::string integer(double v) { return std::isnan(v) ? "?" : std::to_string(int64_t(v)); }

void read_config(simdjson::dom::object o, RunData& run) {
  simdjson::dom::object m, l;
  if (!o["model"].get_object().get(m)) {
    run.seq_length = std::isnan(number(m, "seq_length")) ? 0 : int64_t(number(m, "seq_length"));
    std::string model;
    for (auto [key, unit] : {std::pair{"num_layers", " layers"},
                             {"hidden_size", " hidden"},
                             {"num_attention_heads", " heads"},
                             {"seq_length", " seq"},
                             {"parameters", " parameters"}})
      if (!std::isnan(number(m, key)))
        model += (model.empty() ? "" : ", ") + integer(number(m, key)) + unit;
    run.set("model", model);
  }
  if (!o["layout"].get_object().get(l))
    run.set("layout T/P/D", integer(number(l, "tensor")) + "/" + integer(number(l, "pipeline")) +
                                "/" + integer(number(l, "data")));
  simdjson::dom::array partition;
  if (!o["partition"].get_array().get(partition)) {
    std::string p;
    for (auto e : partition) {
      int64_t n = 0;
      if (!e.get_int64().get(n)) p += (p.empty() ? "" : ",") + std::to_string(n);
    }
    run.set("partition (layers per stage)", p);
  }
  auto set_text = [&](const char* key, const char* field) {
    if (!text(o, field).empty()) run.set(key, text(o, field));
  };
  auto set_int = [&](const char* key, const char* field) {
    if (!std::isnan(number(o, field))) run.set(key, integer(number(o, field)));
  };
  set_text("device", "device");
  set_int("GPUs", "gpus");
  set_int("world size", "world_size");
  set_int("global batch", "global_batch_size");
  set_int("micro batch", "micro_batch_size");
  set_text("precision", "precision");
  set_text("git revision", "git_revision");
  set_text("command line", "command_line");
}

}  // namespace

void read_metrics_file(const std::string& path, RunData& run, int rank,
                       std::vector<Warning>& warnings) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ToolError(path, "cannot open");
  simdjson::dom::parser parser;
  RankStats stats;
  double compute_sum = 0, wait_sum = 0;
  int compute_n = 0, wait_n = 0;
  bool have_config = false;
  int config_rank = 0;
  std::string line;
  for (uint64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    simdjson::dom::object o;
    if (auto err = parser.parse(line).get_object().get(o)) {
      // getline sets eof only for a last line without its newline: a file cut mid-write
      warnings.push_back({location(path, n), in.eof() ? "truncated last line skipped"
                                                      : std::string("not a JSON object (") +
                                                            simdjson::error_message(err) +
                                                            "); line skipped"});
      continue;
    }
    const std::string type = text(o, "type");
    if (type == "config") {
      if (!have_config && rank < 0) read_config(o, run);
      if (!have_config) config_rank = std::isnan(number(o, "rank")) ? 0 : int(number(o, "rank"));
      have_config = true;
      continue;
    }
    const double it = number(o, "iteration");
    if ((type == "train" || type == "validation") && std::isnan(it)) {
      warnings.push_back({location(path, n), "record without an iteration; line skipped"});
      continue;
    }
    if (type == "train") {
      const double alloc = number(o, "mem_max_allocated_mb"),
                   res = number(o, "mem_max_reserved_mb");
      if (!std::isnan(alloc))
        stats.max_allocated_mb =
            std::isnan(stats.max_allocated_mb) ? alloc : std::max(stats.max_allocated_mb, alloc);
      if (!std::isnan(res))
        stats.max_reserved_mb =
            std::isnan(stats.max_reserved_mb) ? res : std::max(stats.max_reserved_mb, res);
      const double c = number(o, "stage_compute_ms"), w = number(o, "stage_wait_ms");
      if (!std::isnan(c)) compute_sum += c, ++compute_n;
      if (!std::isnan(w)) wait_sum += w, ++wait_n;
      if (rank >= 0) continue;
      TrainPoint p;
      p.iteration = int64_t(it);
      p.samples = number(o, "consumed_samples");
      p.tokens = number(o, "tokens");
      p.wall_time = number(o, "wall_time");
      p.lm_loss = number(o, "lm_loss");
      p.learning_rate = number(o, "learning_rate");
      p.grad_norm = number(o, "grad_norm");
      p.loss_scale = number(o, "loss_scale");
      p.batch_size = number(o, "batch_size");
      p.elapsed_ms = number(o, "elapsed_ms_per_iteration");
      p.tokens_per_second = number(o, "tokens_per_second");
      p.mfu_percent = number(o, "mfu_percent");
      run.train.push_back(p);
    } else if (type == "validation" && rank < 0) {
      ValidPoint v;
      v.iteration = int64_t(it);
      v.samples = number(o, "consumed_samples");
      v.tokens = number(o, "tokens");
      v.lm_loss = number(o, "lm_loss");
      run.valid.push_back(v);
    }
  }
  if (compute_n) stats.compute_ms = compute_sum / compute_n;
  if (wait_n) stats.wait_ms = wait_sum / wait_n;
  if (!std::isnan(stats.max_allocated_mb) || !std::isnan(stats.max_reserved_mb) || compute_n ||
      wait_n)
    run.ranks[rank >= 0 ? rank : config_rank] = stats;
}

}  // namespace suite::report
