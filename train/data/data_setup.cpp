#include "train/data/data_setup.h"

#include <limits>

#include "common/cli/error.h"
#include "train/data/megatron_source.h"
#include "train/data/mock_source.h"
#include "train/data/vocab.h"

namespace gpt {

DataSplits open_data(const DataConfig& a) {
  DataSplits d;
  if (!a.vocab_file.empty()) {
    d.vocab_size = vocab_size_from_file(a.vocab_file, a.merge_file);
    if (a.vocab_size > 0 && a.vocab_size != d.vocab_size)
      throw suite::UsageError("--vocab-size " + std::to_string(a.vocab_size) + " disagrees with "
                              "--vocab-file (" + std::to_string(d.vocab_size) + " entries)");
  } else {
    d.vocab_size = a.vocab_size;
  }
  if (a.mock) {
    if (d.vocab_size <= 0)
      throw suite::UsageError("--mock-data needs the vocabulary size: give --vocab-size N or "
                              "--vocab-file");
    const int64_t size =
        a.mock_samples > 0 ? a.mock_samples : std::numeric_limits<int64_t>::max() / 2;
    d.train = std::make_unique<MockSource>(a.seed, 0, int(a.gpt.seq_length), d.vocab_size, size);
    d.valid = std::make_unique<MockSource>(a.seed, 1, int(a.gpt.seq_length), d.vocab_size, size);
    return d;
  }
  return open_megatron_data(a.gpt, d.vocab_size);
}

std::vector<std::string> data_summary(const DataConfig& a) {
  namespace ds = suite::dataset;
  const ds::SampleCounts& n = a.gpt.samples;
  std::vector<std::string> out = {" > datasets target sizes (minimum size):",
                                  "    train:      " + std::to_string(n.train),
                                  "    validation: " + std::to_string(n.valid),
                                  "    test:       " + std::to_string(n.test)};
  if (a.mock) {
    out.push_back(" > data: mock tokens (seed " + std::to_string(a.seed) + ")");
    return out;
  }
  const bool per_split = ds::per_split_data(a.gpt);
  const std::string rule = a.gpt.split_rounding == ds::SplitRounding::Core ? "core" : "legacy";
  for (ds::SplitIndex s : {ds::SplitIndex::Train, ds::SplitIndex::Valid, ds::SplitIndex::Test}) {
    const auto& blend = ds::split_blend(a.gpt, s);
    if (blend.empty() || ds::split_samples(n, s) == 0) continue;
    const auto& words = ds::split_weight_words(a.gpt, s);
    std::string what;
    for (size_t i = 0; i < blend.size(); ++i)
      what += (i ? " " : "") + (words.empty() ? "" : words[i] + " ") + blend[i].prefix;
    if (blend.size() > 1 && words.empty()) what += " (weighted by size)";
    out.push_back(" > " + std::string(ds::split_name(s)) + " data: " + what +
                  (per_split ? ", read whole" : ", --split '" + a.gpt.split + "' (" + rule + " rounding)"));
  }
  return out;
}

}  // namespace gpt
