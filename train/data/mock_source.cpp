#include "train/data/mock_source.h"

#include "train/model/rng.h"

namespace gpt {

MockSource::MockSource(uint64_t seed, int split, int seq_length, int vocab_size, int64_t size)
    : seed_(seed), split_(split), seq_length_(seq_length), vocab_size_(vocab_size), size_(size) {}

void MockSource::sample(int64_t j, int* tokens) const {
  Rng rng(stream_key(seed_, 0x3D0C + uint64_t(split_), uint64_t(j)));
  for (int t = 0; t <= seq_length_; ++t) tokens[t] = int(rng.below(uint32_t(vocab_size_)));
}

}  // namespace gpt
