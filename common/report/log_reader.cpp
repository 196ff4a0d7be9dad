// Text logs: Megatron-LM's training_log lines (" [2026-11-27 10:07:25.267573] iteration 5/ 30 |
// consumed samples: ... |", legacy ones without the timestamp, launcher prefixes such as
// "[default0]:" allowed), "[Rank r] (after N iterations) memory (MB) | ..." lines, validation
// lines, the "using world size: ..." line and the argument dump; gpt-train prints the same lines
// plus "tokens per second", "TFLOP/s" and "MFU".
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>

#include "common/cli/error.h"
#include "common/report/readers.h"

namespace suite::report {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The leading number of `s` ("972.2/980.1" -> 972.2, "1.258B" -> 1.258e9, "12.5%" -> 12.5);
// NaN when there is none.
double leading_number(std::string_view s, bool suffixes = false) {
  s = trim(s);
  std::string t(s.substr(0, 64));
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return kUnknown;
  if (suffixes && *end) {
    switch (*end) {
      case 'K':
      case 'k':
        return v * 1e3;
      case 'M':
        return v * 1e6;
      case 'B':
      case 'G':
        return v * 1e9;
      case 'T':
        return v * 1e12;
    }
  }
  return v;
}

// "key: value | key: value |" -> calls f(key, value) for each field with a colon.
template <typename F>
void fields(std::string_view s, F f) {
  while (!s.empty()) {
    const size_t bar = s.find('|');
    std::string_view field = s.substr(0, bar);
    const size_t colon = field.rfind(": ");
    if (colon != std::string_view::npos)
      f(trim(field.substr(0, colon)), trim(field.substr(colon + 1)));
    if (bar == std::string_view::npos) break;
    s.remove_prefix(bar + 1);
  }
}

// "iteration   N/   M |" at `pos`: N, or -1.
int64_t iteration_number(std::string_view line, size_t pos, size_t* after) {
  size_t i = pos + 9;  // "iteration"
  while (i < line.size() && line[i] == ' ') ++i;
  const size_t digits = i;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  if (i == digits) return -1;
  const int64_t n = std::strtoll(std::string(line.substr(digits, i - digits)).c_str(), nullptr, 10);
  while (i < line.size() && line[i] == ' ') ++i;
  if (i >= line.size() || line[i] != '/') return -1;
  *after = i;
  return n;
}

}  // namespace

void read_text_log(const std::string& path, RunData& run, std::vector<Warning>& warnings) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ToolError(path, "cannot open");
  bool in_args = false, timestamped = false, gpt_train = false;
  int64_t last_iteration = 0, world = 0;
  std::string line;
  for (uint64_t n = 1; std::getline(in, line); ++n) {
    std::string_view l(line);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    // the argument dump: "  seq_length ...................... 1024"
    if (l.find("-- arguments --") != std::string_view::npos) {
      in_args = true;
      continue;
    }
    if (l.find("-- end of arguments --") != std::string_view::npos) {
      in_args = false;
      continue;
    }
    if (in_args) {
      const size_t dots = l.find(" ...");
      if (dots != std::string_view::npos) {
        const std::string key(trim(l.substr(0, dots)));
        const size_t v = l.find_first_not_of(". ", dots);
        const std::string value(v == std::string_view::npos ? "" : trim(l.substr(v)));
        if (key == "seq_length") run.seq_length = std::atoll(value.c_str());
        static const char* kKeep[][2] = {{"num_layers", "layers"},
                                         {"hidden_size", "hidden"},
                                         {"num_attention_heads", "heads"},
                                         {"global_batch_size", "global batch"},
                                         {"micro_batch_size", "micro batch"},
                                         {"tensor_model_parallel_size", "T"},
                                         {"pipeline_model_parallel_size", "P"},
                                         {"data_parallel_size", "D"},
                                         {"world_size", "world size"},
                                         {"params_dtype", "precision"},
                                         {"train_iters", "train iterations"},
                                         {"seq_length", "seq"}};
        for (auto& k : kKeep)
          if (key == k[0]) run.set(std::string("arg:") + k[1], value);
        continue;
      }
    }
    if (l.rfind("> Megatron-Core version", 0) == 0) {
      const size_t v = l.find_first_not_of(". ", l.find(".."));
      if (v != std::string_view::npos) run.set("Megatron-Core", std::string(trim(l.substr(v))));
      continue;
    }
    if (l.rfind("using world size:", 0) == 0) {
      // "using world size: 4, data-parallel size: 4, ..., tensor-model-parallel size: 1, ..."
      auto grab = [&](std::string key) {
        size_t k = l.find(key);
        if (k == std::string_view::npos && key == "data-parallel size:") {  // legacy spelling
          key = "data-parallel-size:";
          k = l.find(key);
        }
        return k == std::string_view::npos
                   ? std::string("?")
                   : std::to_string(int64_t(leading_number(l.substr(k + key.size()))));
      };
      world = int64_t(leading_number(l.substr(17)));
      run.set("layout T/P/D", grab("tensor-model-parallel size:") + "/" +
                                  grab("pipeline-model-parallel size:") + "/" +
                                  grab("data-parallel size:"));
      run.set("world size", std::to_string(world));
      continue;
    }
    // memory: "[Rank 2] (after 5 iterations) memory (MB) | allocated: ... | max allocated: ..."
    const size_t rank_at = l.find("[Rank ");
    if (rank_at != std::string_view::npos && l.find("memory (MB)") != std::string_view::npos &&
        l.find('|') != std::string_view::npos) {
      const double r = leading_number(l.substr(rank_at + 6));
      if (std::isnan(r)) continue;
      RankStats& s = run.ranks[int(r)];
      fields(l.substr(l.find('|')), [&](std::string_view k, std::string_view v) {
        const double x = leading_number(v);
        if (std::isnan(x)) return;
        if (k == "max allocated")
          s.max_allocated_mb = std::isnan(s.max_allocated_mb) ? x : std::max(s.max_allocated_mb, x);
        if (k == "max reserved")
          s.max_reserved_mb = std::isnan(s.max_reserved_mb) ? x : std::max(s.max_reserved_mb, x);
      });
      continue;
    }
    // validation: " validation loss at iteration 20 | lm loss value: ... |" (or "at the end of
    // training for val data", or "at iteration 20 on validation set")
    const size_t val_at = l.find("validation loss at ");
    if (val_at != std::string_view::npos) {
      ValidPoint v;
      v.iteration = last_iteration;
      const std::string_view rest = l.substr(val_at + 19);
      if (rest.rfind("iteration ", 0) == 0) v.iteration = int64_t(leading_number(rest.substr(10)));
      fields(rest, [&](std::string_view k, std::string_view val) {
        if (k == "lm loss value") v.lm_loss = leading_number(val);
      });
      if (std::isnan(v.lm_loss))
        warnings.push_back(
            {location(path, n), "validation line without an lm loss value; skipped"});
      else
        run.valid.push_back(v);
      continue;
    }
    const size_t it_at = l.find("iteration ");
    if (it_at == std::string_view::npos || l.find('|') == std::string_view::npos) continue;
    size_t slash = 0;
    const int64_t it = iteration_number(l, it_at, &slash);
    if (it < 0) continue;
    if (in.eof() && l.back() != '|') {
      warnings.push_back({location(path, n), "truncated last line skipped"});
      continue;
    }
    // " [2026-11-27 10:07:25.267573] iteration" (a launcher's "[default0]:" is no timestamp)
    const size_t bracket = l.substr(0, it_at).find('[');
    if (bracket != std::string_view::npos && bracket + 5 < it_at && l[bracket + 5] == '-' &&
        l[bracket + 1] >= '0' && l[bracket + 1] <= '9')
      timestamped = true;
    TrainPoint p;
    p.iteration = it;
    double tokens_per_gpu = kUnknown, samples_per_second = kUnknown, actual_seq = kUnknown;
    bool any = false;
    fields(l.substr(l.find('|', slash) == std::string_view::npos ? l.size() : l.find('|', slash)),
           [&](std::string_view k, std::string_view v) {
             const double x = leading_number(v, k == "consumed tokens");
             any = true;
             if (k == "consumed samples")
               p.samples = x;
             else if (k == "consumed tokens")
               p.tokens = x;
             else if (k == "elapsed time per iteration (ms)")
               p.elapsed_ms = x;
             else if (k == "learning rate")
               p.learning_rate = x;
             else if (k == "global batch size" || k == "gloabl batch size")
               p.batch_size = x;
             else if (k == "lm loss")
               p.lm_loss = x;
             else if (k == "loss scale")
               p.loss_scale = x;
             else if (k == "grad norm")
               p.grad_norm = x;
             else if (k == "throughput per GPU (TFLOP/s/GPU)" || k == "TFLOPs")
               p.tflops_per_gpu = x;
             else if (k == "tokens per second") {
               p.tokens_per_second = x;
               gpt_train = true;
             } else if (k == "MFU")
               p.mfu_percent = x;
             else if (k == "tokens per GPU (tokens/s/GPU)" || k == "tokens/sec/gpu" ||
                      k == "tokens per gpu per second (tgs)")
               tokens_per_gpu = x;
             else if (k == "samples per second")
               samples_per_second = x;
             else if (k == "actual seq length" || k == "actual seqlen")
               actual_seq = x;
             else if (k == "current time")
               p.wall_time = x;
           });
    if (!any ||
        (std::isnan(p.lm_loss) && std::isnan(p.elapsed_ms) && std::isnan(p.learning_rate))) {
      warnings.push_back({location(path, n), "iteration line without readable fields; skipped"});
      continue;
    }
    if (!std::isnan(actual_seq) && run.seq_length == 0) run.seq_length = int64_t(actual_seq);
    if (std::isnan(p.tokens_per_second) && !std::isnan(tokens_per_gpu) && world > 0)
      p.tokens_per_second = tokens_per_gpu * double(world);
    if (std::isnan(p.tokens_per_second) && !std::isnan(samples_per_second) && run.seq_length > 0)
      p.tokens_per_second = samples_per_second * double(run.seq_length);
    if (!run.train.empty() && it <= run.train.back().iteration)
      warnings.push_back({location(path, n), "iteration " + std::to_string(it) +
                                                 " after iteration " +
                                                 std::to_string(run.train.back().iteration) +
                                                 " (a restarted run?); kept in file order"});
    last_iteration = it;
    run.train.push_back(p);
  }
  run.kind = gpt_train     ? "gpt-train log"
             : timestamped ? "Megatron log"
                           : "Megatron log (legacy lines)";
  // The argument dump's values, gathered into the header rows gpt-train's config record gives.
  auto arg = [&](const char* k) { return run.get(std::string("arg:") + k); };
  if (!arg("layers").empty())
    run.set("model", arg("layers") + " layers, hidden " + arg("hidden") + ", " + arg("heads") +
                         " heads, seq " + arg("seq"));
  if (run.get("layout T/P/D").empty() && !arg("T").empty())
    run.set("layout T/P/D", arg("T") + "/" + arg("P") + "/" + (arg("D").empty() ? "?" : arg("D")));
  if (!arg("global batch").empty()) run.set("global batch", arg("global batch"));
  if (!arg("micro batch").empty()) run.set("micro batch", arg("micro batch"));
  if (!arg("precision").empty()) run.set("precision", arg("precision"));
  if (run.get("world size").empty() && !arg("world size").empty())
    run.set("world size", arg("world size"));
  std::erase_if(run.config, [](const auto& kv) { return kv.first.rfind("arg:", 0) == 0; });
}

}  // namespace suite::report
