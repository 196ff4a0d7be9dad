#include "train/data/megatron_source.h"

#include <filesystem>
#include <optional>

#include "common/cli/error.h"
#include "common/dataset/blending.h"
#include "common/dataset/index_map.h"
#include "common/dataset/index_map_cache.h"
#include "common/dataset/indexed_dataset.h"
#include "common/dataset/sample_counts.h"
#include "common/dataset/split.h"

namespace gpt {
namespace ds = suite::dataset;
namespace {

struct Component {
  std::shared_ptr<ds::IndexedDataset> data;
  std::shared_ptr<ds::IndexMap> map;  // null: empty split
};

// One split of one or several datasets.
class MegatronSource final : public SampleSource {
 public:
  MegatronSource(std::vector<Component> parts, ds::BlendingIndices blend, int64_t size,
                 int seq_length)
      : parts_(std::move(parts)), blend_(std::move(blend)), size_(size), L_(seq_length) {}

  int64_t size() const override { return size_; }

  void sample(int64_t j, int* tokens) const override {
    size_t part = 0;
    uint64_t k = uint64_t(j);
    if (parts_.size() > 1) {
      part = size_t(blend_.dataset_index[size_t(j)]);
      k = uint64_t(blend_.dataset_sample_index[size_t(j)]);
    }
    const Component& c = parts_[part];
    const auto t = ds::read_sample(*c.map, *c.data, k % c.map->size());
    for (int i = 0; i <= L_; ++i) tokens[i] = int(t[size_t(i)]);
  }

 private:
  std::vector<Component> parts_;
  ds::BlendingIndices blend_;
  int64_t size_;
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

// Index map for `range` of `prefix`: classic file names next to the data, else the md5 cache in
// --data-cache-path, else built (and saved in whichever cache applies).
std::shared_ptr<ds::IndexMap> index_map(const TrainArgs& a, const std::string& prefix,
                                        const ds::IndexedDataset& data, ds::SequenceRange range,
                                        ds::SplitIndex which, uint64_t num_samples) {
  ds::IndexMapConfig cfg;
  cfg.split = std::string(ds::split_name(which));
  cfg.num_samples = num_samples;
  cfg.seq_length = uint32_t(a.model.seq_length);
  cfg.seed = uint32_t(a.seed);
  const auto classic = ds::classic_index_map_files(prefix, cfg.split, num_samples, cfg.seq_length,
                                                   cfg.seed);
  if (ds::index_map_files_exist(classic))
    return std::make_shared<ds::IndexMap>(ds::load_index_map(classic));
  std::string description;
  std::optional<ds::IndexMapFiles> cache;
  if (!a.data_cache_path.empty()) {
    description = ds::md5_index_map_description(prefix, cfg.split, num_samples, cfg.seq_length,
                                                 cfg.seed, a.split);
    cache = ds::md5_index_map_files(a.data_cache_path, description);
    if (ds::index_map_files_exist(*cache))
      return std::make_shared<ds::IndexMap>(ds::load_index_map(*cache));
  }
  auto map = std::make_shared<ds::IndexMap>(
      ds::build_index_map(data.sequence_lengths(), range, cfg));
  if (cache) {
    std::filesystem::create_directories(a.data_cache_path);
    ds::save_index_map(*map, *cache, description);
  } else {
    try {  // Megatron caches next to the data; a read-only data directory just means no cache
      ds::save_index_map(*map, classic);
    } catch (const suite::ToolError&) {
    }
  }
  return map;
}

}  // namespace

DataSplits open_megatron_data(const TrainArgs& a, int64_t train_iters, int vocab_size) {
  if (vocab_size <= 0)
    throw suite::UsageError("--data-path needs the vocabulary: give --vocab-file (and "
                            "--merge-file) or --vocab-size");
  const auto components = ds::parse_blend(a.data_path);
  std::vector<std::shared_ptr<ds::IndexedDataset>> datasets;
  for (const auto& c : components) {
    if (!ds::indexed_dataset_exists(c.prefix))
      throw suite::ToolError(c.prefix, "dataset not found (need " + c.prefix + ".bin and " +
                                           c.prefix + ".idx)");
    datasets.push_back(std::make_shared<ds::IndexedDataset>(c.prefix));
    const int64_t mx = max_token_id(*datasets.back());
    if (mx >= vocab_size)
      throw suite::ToolError(c.prefix, "holds token id " + std::to_string(mx) +
                                           " but the vocabulary has only " +
                                           std::to_string(vocab_size) + " entries");
  }
  ds::TrainingSchedule sched;
  sched.train_iters = uint64_t(train_iters);
  if (a.train_samples > 0) sched.train_samples = uint64_t(a.train_samples);
  sched.global_batch_size = uint64_t(a.global_batch_size);
  sched.eval_interval = uint64_t(a.eval_interval);
  sched.eval_iters = uint64_t(a.eval_iters);
  const auto counts = ds::requested_sample_counts(sched);

  DataSplits out;
  out.vocab_size = vocab_size;
  for (auto which : {ds::SplitIndex::Train, ds::SplitIndex::Valid}) {
    const uint64_t wanted = which == ds::SplitIndex::Train ? counts.train : counts.valid;
    ds::BlendPlan plan;
    if (components.size() > 1) plan = ds::plan_blend(components, wanted);
    std::vector<Component> parts;
    bool empty = wanted == 0;
    for (size_t i = 0; i < components.size() && !empty; ++i) {
      const auto range = ds::split_range_legacy(a.split, datasets[i]->sequence_count(), which);
      if (range.empty()) {
        empty = true;
        break;
      }
      const uint64_t n = components.size() > 1 ? plan.component_samples[i] : wanted;
      parts.push_back({datasets[i], index_map(a, components[i].prefix, *datasets[i], range,
                                              which, n)});
    }
    std::unique_ptr<SampleSource> src;
    if (empty) {
      if (which == ds::SplitIndex::Train)
        throw suite::UsageError("--split '" + a.split + "' leaves the training split empty");
      src = std::make_unique<MegatronSource>(std::vector<Component>{}, ds::BlendingIndices{}, 0,
                                             a.model.seq_length);
    } else if (parts.size() == 1) {
      const int64_t size = int64_t(parts[0].map->size());
      src = std::make_unique<MegatronSource>(std::move(parts), ds::BlendingIndices{}, size,
                                             a.model.seq_length);
    } else {
      auto blend = ds::build_blending_indices(plan.blend_weights, wanted);
      src = std::make_unique<MegatronSource>(std::move(parts), std::move(blend), int64_t(wanted),
                                             a.model.seq_length);
    }
    (which == ds::SplitIndex::Train ? out.train : out.valid) = std::move(src);
  }
  return out;
}

}  // namespace gpt
