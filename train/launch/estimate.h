// Training-time arithmetic of `gpt-launch estimate` (the Megatron paper's): a GPT of L layers, hidden
// size h, vocabulary V and sequence s has 12 L h^2 (1 + 13/(12 h) + (V + s)/(12 L h)) parameters, and
// training on T tokens takes 8 T P / (GPUs x X) seconds at X FLOP/s per GPU with full activation
// recomputation (6 T P without: forward 2, backward 4, recomputed forward 2).
#pragma once

#include <string>

namespace launch {

double gpt_parameters(double layers, double hidden, double vocab, double seq);
// Days of training.
double training_days(double tokens, double params, double gpus, double tflops_per_gpu, bool recompute);
// The mean TFLOP/s per GPU of a gpt-train metrics file (JSON lines with "tflops") or log (lines with
// "TFLOP/s: X"), leaving out the first logged iteration (warm-up); sets `count`. Throws
// suite::ToolError when the file has none.
double measured_tflops(const std::string& path, int& count);

}  // namespace launch
