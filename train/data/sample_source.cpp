#include "train/data/sample_source.h"

#include <vector>

#include "common/cli/error.h"

namespace gpt {

void fill_batch(const SampleSource& source, int64_t first, int B, int T, int* inputs,
                int* targets) {
  const int64_t n = source.size();
  if (n <= 0) throw suite::ToolError("internal: batch requested from an empty data split");
  std::vector<int> tokens(size_t(T) + 1);
  for (int b = 0; b < B; ++b) {
    source.sample((first + b) % n, tokens.data());
    for (int t = 0; t < T; ++t) {
      inputs[size_t(b) * T + t] = tokens[t];
      targets[size_t(b) * T + t] = tokens[t + 1];
    }
  }
}

}  // namespace gpt
