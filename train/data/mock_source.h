// Mock data (Megatron --mock-data, NeMo data_impl=mock): sample j is seq_length + 1 uniform random
// token ids drawn from a stream keyed by (seed, split, j), so any sample can be produced on
// demand and a resumed run sees exactly the samples an uninterrupted run would.
#pragma once

#include "train/data/sample_source.h"

namespace gpt {

class MockSource final : public SampleSource {
 public:
  // size: distinct samples before wrapping (tests use a small pool so a model can memorise it).
  MockSource(uint64_t seed, int split, int seq_length, int vocab_size, int64_t size);
  int64_t size() const override { return size_; }
  void sample(int64_t j, int* tokens) const override;

 private:
  uint64_t seed_;
  int split_, seq_length_, vocab_size_;
  int64_t size_;
};

}  // namespace gpt
