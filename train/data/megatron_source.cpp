#include "train/data/megatron_source.h"

#include <memory>

#include "common/cli/error.h"
#include "common/dataset/gpt_dataset.h"

namespace gpt {
namespace ds = suite::dataset;
namespace {

// One split of one or several datasets.
class MegatronSource final : public SampleSource {
 public:
  MegatronSource(std::shared_ptr<const ds::GptDatasets> data, ds::SplitIndex which, int seq_length)
      : data_(std::move(data)), split_(data_->split(which)), L_(seq_length) {}

  int64_t size() const override { return int64_t(split_.size()); }

  void sample(int64_t j, int* tokens) const override {
    const auto [part, k] = split_.locate(uint64_t(j));
    const ds::IndexMap& map = *split_.maps[part].map;
    const auto t = ds::read_sample(map, *split_.datasets[part], k % map.size());
    for (int i = 0; i <= L_; ++i) tokens[i] = int(t[size_t(i)]);
  }

 private:
  std::shared_ptr<const ds::GptDatasets> data_;
  const ds::GptSplit& split_;
  int L_;
};

// Largest token id in the whole .bin (one pass; run before any compute).
int64_t max_token_id(const ds::IndexedDataset& d) {
  const auto bytes = d.data_bytes();
  int64_t mx = -1;
  auto scan = [&](auto tag) {
    using T = decltype(tag);
    const T* p = reinterpret_cast<const T*>(bytes.data());
    const size_t n = bytes.size() / sizeof(T);
    T m = 0;
    for (size_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;
    if (n) mx = int64_t(m);
  };
  switch (d.dtype()) {
    case ds::DType::UInt8: scan(uint8_t{}); break;
    case ds::DType::UInt16: scan(uint16_t{}); break;
    case ds::DType::Int32: scan(int32_t{}); break;
    case ds::DType::Int64: scan(int64_t{}); break;
    case ds::DType::Int16: scan(int16_t{}); break;
    default:
      throw suite::ToolError(d.idx_file(), "token dtype " + std::string(ds::dtype_name(d.dtype())) +
                                               " is not an integer type gpt-train reads");
  }
  return mx;
}

}  // namespace

DataSplits open_megatron_data(const ds::GptDatasetConfig& config, int vocab_size) {
  if (vocab_size <= 0)
    throw suite::UsageError("--data-path needs the vocabulary: give --vocab-file (and "
                            "--merge-file) or --vocab-size");
  auto datasets = ds::open_gpt_datasets(config);
  const std::vector<std::string> prefixes = ds::data_prefixes(config);
  for (size_t i = 0; i < datasets.size(); ++i) {
    const int64_t mx = max_token_id(*datasets[i]);
    if (mx >= vocab_size)
      throw suite::ToolError(prefixes[i], "holds token id " + std::to_string(mx) +
                                                         " but the vocabulary has only " +
                                                         std::to_string(vocab_size) + " entries");
  }
  ds::GptBuildOptions options;
  options.save_maps = config.cache_dir.empty() && config.naming == ds::CacheNaming::Classic
                          ? ds::GptBuildOptions::Save::IfWritable
                          : ds::GptBuildOptions::Save::Yes;
  options.empty_split_ok = true;
  auto data = std::make_shared<const ds::GptDatasets>(
      ds::build_gpt_datasets(config, std::move(datasets), options));
  if (data->split(ds::SplitIndex::Train).empty())
    throw suite::UsageError(ds::per_split_data(config) ? "--valid-data-path and --test-data-path need --train-data-path"
                                                       : "--split '" + config.split + "' leaves the training split empty");
  DataSplits out;
  out.vocab_size = vocab_size;
  const int L = int(config.seq_length);
  out.train = std::make_unique<MegatronSource>(data, ds::SplitIndex::Train, L);
  out.valid = std::make_unique<MegatronSource>(data, ds::SplitIndex::Valid, L);
  return out;
}

}  // namespace gpt
