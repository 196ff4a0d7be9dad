// A RUN argument to runs: which files it names, and what each holds.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "common/cli/error.h"
#include "common/report/readers.h"

namespace suite::report {
namespace {

namespace fs = std::filesystem;

// "m.rank3.jsonl" -> 3 (stem "m.jsonl" in *main); -1 for a file without a rank.
int rank_of(const std::string& name, std::string* main) {
  static const std::regex re(R"(^(.*)\.rank([0-9]+)(\.[^.]*)?$)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return -1;
  *main = m[1].str() + m[3].str();
  return std::stoi(m[2].str());
}

// JSON lines start with '{'; anything else is read as a text log.
bool looks_like_metrics(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c;
  while (in.get(c))
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '{';
  return false;
}

std::string stem(const fs::path& p) {
  std::string s = p.filename().string();
  for (const char* ext : {".jsonl", ".json", ".log", ".txt"})
    if (s.size() > std::strlen(ext) && s.ends_with(ext))
      return s.substr(0, s.size() - std::strlen(ext));
  return s;
}

// gpt-train's log has no argument dump: tokens per iteration = tokens/s x seconds per iteration,
// taken from the slowest interval, where the printed milliseconds round least.
void infer_seq_length(RunData& run, std::vector<Warning>& warnings) {
  const double gbs_config = std::atof(run.get("global batch").c_str());
  double best_ms = 0, tokens = 0, gbs = 0;
  for (const TrainPoint& p : run.train) {
    const double b = !std::isnan(p.batch_size) ? p.batch_size : gbs_config;
    if (p.elapsed_ms > best_ms && p.tokens_per_second > 0 && b > 0) {
      best_ms = p.elapsed_ms;
      tokens = p.tokens_per_second * p.elapsed_ms / 1000.0;
      gbs = b;
    }
  }
  if (best_ms <= 0) return;
  run.seq_length = std::llround(tokens / gbs);
  if (run.seq_length <= 0) return;
  run.set("sequence length", std::to_string(run.seq_length) + " (inferred)");
  warnings.push_back({run.source, "sequence length " + std::to_string(run.seq_length) +
                                      " inferred from tokens per second and iteration time"});
}

}  // namespace

void derive(RunData& run, double peak_tflops) {
  const double gbs_config = std::atof(run.get("global batch").c_str());
  double seconds = 0;
  int64_t prev_it = 0;
  double prev_wall = kUnknown;
  for (TrainPoint& p : run.train) {
    const double gbs = !std::isnan(p.batch_size) ? p.batch_size : gbs_config;
    if (std::isnan(p.samples) && gbs > 0) p.samples = double(p.iteration) * gbs;
    if (std::isnan(p.tokens) && !std::isnan(p.samples) && run.seq_length > 0)
      p.tokens = p.samples * double(run.seq_length);
    if (std::isnan(p.tokens_per_second) && gbs > 0 && run.seq_length > 0 && p.elapsed_ms > 0)
      p.tokens_per_second = gbs * double(run.seq_length) / (p.elapsed_ms / 1000.0);
    if (std::isnan(p.mfu_percent) && peak_tflops > 0 && !std::isnan(p.tflops_per_gpu))
      p.mfu_percent = 100.0 * p.tflops_per_gpu / peak_tflops;
    // training time: the iteration times summed (evaluation and checkpoints left out, so that
    // runs compare by their training speed)
    const int64_t steps = p.iteration > prev_it ? p.iteration - prev_it : 0;
    if (!std::isnan(p.elapsed_ms))
      seconds += p.elapsed_ms / 1000.0 * double(steps);
    else if (!std::isnan(p.wall_time) && !std::isnan(prev_wall))
      seconds += p.wall_time - prev_wall;
    p.seconds = seconds;
    prev_it = p.iteration;
    prev_wall = p.wall_time;
  }
  // validation points take the x values of the logged interval at or before them
  for (ValidPoint& v : run.valid) {
    auto it = std::upper_bound(run.train.begin(), run.train.end(), v.iteration,
                               [](int64_t i, const TrainPoint& p) { return i < p.iteration; });
    if (it == run.train.begin()) continue;
    const TrainPoint& p = *std::prev(it);
    if (std::isnan(v.samples)) v.samples = p.samples;
    if (std::isnan(v.tokens)) v.tokens = p.tokens;
    v.seconds = p.seconds;
  }
}

std::vector<RunData> load_runs(const std::string& path, double peak_tflops,
                               std::vector<Warning>& warnings) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ToolError(path, "no such file or directory");
  std::vector<RunData> runs;
  // main metrics files -> their rank files
  std::map<std::string, std::map<int, std::string>> groups;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string name = f.filename().string();
      if (name.rfind("events.out.tfevents.", 0) == 0 || !looks_like_metrics(f.string())) continue;
      std::string main;
      const int r = rank_of(name, &main);
      if (r < 0)
        groups[name];
      else
        groups[main][r] = f.string();
    }
    if (groups.empty()) throw ToolError(path, "no metrics files (JSON lines) in this folder");
    for (auto& [main, ranks] : groups) {
      RunData run;
      run.source = (fs::path(path) / main).string();
      run.name = fs::path(path).filename().string();
      if (run.name.empty()) run.name = fs::path(path).parent_path().filename().string();
      if (groups.size() > 1) run.name += "/" + stem(main);
      run.kind = "gpt-train metrics";
      const fs::path main_path = fs::path(path) / main;
      if (fs::exists(main_path)) read_metrics_file(main_path.string(), run, -1, warnings);
      for (auto& [r, f] : ranks) {
        // without a main file the last rank's file gives the series (it is the main file's twin)
        if (!fs::exists(main_path) && r == ranks.rbegin()->first)
          read_metrics_file(f, run, -1, warnings);
        read_metrics_file(f, run, r, warnings);
      }
      runs.push_back(std::move(run));
    }
  } else {
    RunData run;
    run.source = path;
    run.name = stem(fs::path(path));
    if (looks_like_metrics(path)) {
      run.kind = "gpt-train metrics";
      read_metrics_file(path, run, -1, warnings);
      // PATH.rank<r> beside it
      const fs::path p(path);
      const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        std::string main;
        const int r = rank_of(e.path().filename().string(), &main);
        if (r >= 0 && main == p.filename().string())
          read_metrics_file(e.path().string(), run, r, warnings);
      }
    } else {
      read_text_log(path, run, warnings);
    }
    runs.push_back(std::move(run));
  }
  for (RunData& run : runs) {
    if (run.train.empty() && run.valid.empty())
      warnings.push_back({run.source, "no iteration lines or metrics records found"});
    if (run.seq_length == 0) infer_seq_length(run, warnings);
    if (run.seq_length == 0 && !run.train.empty())
      warnings.push_back({run.source, "sequence length unknown: not drawn against tokens"});
    derive(run, peak_tflops);
  }
  return runs;
}

}  // namespace suite::report
