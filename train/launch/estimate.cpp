#include "train/launch/estimate.h"

#include <fstream>
#include <regex>

#include "common/cli/error.h"

namespace launch {

double gpt_parameters(double layers, double hidden, double vocab, double seq) {
  return 12 * layers * hidden * hidden * (1 + 13 / (12 * hidden) + (vocab + seq) / (12 * layers * hidden));
}

double training_days(double tokens, double params, double gpus, double tflops_per_gpu, bool recompute) {
  return (recompute ? 8 : 6) * tokens * params / (gpus * tflops_per_gpu * 1e12 * 86400);
}

double measured_tflops(const std::string& path, int& count) {
  std::ifstream in(path);
  if (!in) throw suite::ToolError(path, "cannot open");
  static const std::regex json(R"("tflops"\s*:\s*([0-9.eE+-]+))"), log(R"(TFLOP/s:\s*([0-9.eE+-]+))");
  double sum = 0;
  int seen = 0;
  count = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.find("\"type\":\"valid\"") != std::string::npos) continue;
    if (!std::regex_search(line, m, json) && !std::regex_search(line, m, log)) continue;
    if (seen++ == 0) continue;  // the first logged iteration includes warm-up
    sum += std::stod(m[1]);
    count++;
  }
  if (count == 0) throw suite::ToolError(path, "no TFLOP/s of a second logged iteration (a gpt-train metrics file or log?)");
  return sum / count;
}

}  // namespace launch
