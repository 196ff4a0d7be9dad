// What `gpt-launch status` reads from a results folder: per rank the last iteration line and the
// error lines of logs/rank-<r>.log (warnings filtered out), and the iteration times and tokens/s of
// the logged iterations.
#pragma once

#include <string>
#include <vector>

namespace launch {

struct IterationLine {
  long iteration = 0, total = 0;
  double ms = 0, tokens_per_s = 0, loss = 0;
};

struct RankLog {
  int rank = 0;
  std::string last_iteration;        // the whole line, trimmed; empty: none yet
  std::vector<std::string> errors;   // in file order
  std::vector<IterationLine> iterations;
};

// Parses one gpt-train iteration line (" iteration 10/ 100 | ... elapsed time per iteration (ms):
// 5.3 | ... lm loss: ... | tokens per second: ..."); false for other lines.
bool parse_iteration_line(const std::string& line, IterationLine& out);
// An error line: gpt-train's own error lines, exceptions, crashes and Slurm's task errors; Python-style
// warnings ("UserWarning", "warnings.warn(", "WARNING:") never count.
bool is_error_line(const std::string& line);
// logs/rank-*.log of a results folder, by rank.
std::vector<RankLog> read_rank_logs(const std::string& results_dir);
// Error lines of the Slurm output files (logs/slurm-*.out).
std::vector<std::string> read_slurm_errors(const std::string& results_dir);

}  // namespace launch
