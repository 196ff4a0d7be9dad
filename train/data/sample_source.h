// Where training samples come from: sample j is seq_length + 1 token ids; the model reads
// tokens[0:L] and predicts tokens[1:L+1] (Megatron GPTDataset convention).
#pragma once

#include <cstdint>
#include <memory>

namespace gpt {

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  // Distinct samples; reads past the end wrap around (a new epoch). 0 means an empty split.
  virtual int64_t size() const = 0;
  // Writes seq_length + 1 tokens of sample j (0 <= j < size()).
  virtual void sample(int64_t j, int* tokens) const = 0;
};

// Fills inputs/targets [B, T] with samples first, first+1, ... (wrapping at source.size()).
void fill_batch(const SampleSource& source, int64_t first, int B, int T, int* inputs,
                int* targets);

}  // namespace gpt
