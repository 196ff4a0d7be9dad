#include "train/launch/status.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

namespace fs = std::filesystem;

namespace launch {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The number after `label` up to the next '|', or NaN-free 0 when absent.
double field(const std::string& line, const std::string& label) {
  size_t at = line.find(label);
  if (at == std::string::npos) return 0;
  try {
    return std::stod(line.substr(at + label.size()));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

bool parse_iteration_line(const std::string& line, IterationLine& out) {
  static const std::regex head(R"(^\s*iteration\s+(\d+)/\s*(\d+)\s*\|)");
  std::smatch m;
  if (!std::regex_search(line, m, head)) return false;
  out.iteration = std::stol(m[1]);
  out.total = std::stol(m[2]);
  out.ms = field(line, "elapsed time per iteration (ms):");
  out.tokens_per_s = field(line, "tokens per second:");
  out.loss = field(line, "lm loss:");
  return true;
}

bool is_error_line(const std::string& line) {
  static const std::regex warning(R"(Warning\b|warnings\.warn|^\s*WARNING\b|\bwarning:)", std::regex::icase);
  static const std::regex error(
      R"((^|[^a-z])(error|fatal|exception|traceback|terminate called|segmentation fault|aborted|core dumped|out of memory|killed)([^a-z]|$)|^gpt-train: )",
      std::regex::icase);
  return !std::regex_search(line, warning) && std::regex_search(line, error);
}

std::vector<RankLog> read_rank_logs(const std::string& results_dir) {
  std::vector<RankLog> ranks;
  static const std::regex name(R"(rank-(\d+)\.log)");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(results_dir) / "logs", ec)) {
    std::smatch m;
    std::string file = e.path().filename().string();
    if (!std::regex_match(file, m, name)) continue;
    RankLog r;
    r.rank = std::stoi(m[1]);
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      IterationLine it;
      if (parse_iteration_line(line, it)) {
        r.last_iteration = trim(line);
        r.iterations.push_back(it);
      } else if (is_error_line(line)) {
        r.errors.push_back(trim(line));
      }
    }
    ranks.push_back(std::move(r));
  }
  std::sort(ranks.begin(), ranks.end(), [](const RankLog& a, const RankLog& b) { return a.rank < b.rank; });
  return ranks;
}

std::vector<std::string> read_slurm_errors(const std::string& results_dir) {
  std::vector<std::string> errors;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(results_dir) / "logs", ec))
    if (e.path().filename().string().starts_with("slurm-")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);)
      if (is_error_line(line)) errors.push_back(trim(line));
  }
  return errors;
}

}  // namespace launch
