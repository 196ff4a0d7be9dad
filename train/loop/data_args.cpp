#include "train/loop/data_args.h"

#include "common/cli/error.h"
#include "common/dataset/data_args_file.h"

namespace gpt {
namespace ds = suite::dataset;

DataConfig data_config(const TrainArgs& a, int64_t train_iters) {
  DataConfig d;
  d.vocab_file = a.vocab_file;
  d.merge_file = a.merge_file;
  d.vocab_size = a.vocab_size;
  d.mock = a.mock_data;
  d.mock_samples = a.mock_data_samples;
  d.seed = a.seed;
  ds::GptDatasetConfig& g = d.gpt;
  g.seq_length = uint32_t(a.model.seq_length);
  if (a.mock_data) return d;
  // The list files are input: their errors name the file (exit 1), not a flag.
  std::vector<std::string> data_path = a.data_path;
  if (!a.data_args_path.empty()) data_path = ds::read_data_args_file(a.data_args_path);
  std::array<std::vector<std::string>, 3> split_paths = {a.train_data_path, a.valid_data_path, a.test_data_path};
  if (!a.per_split_data_args_path.empty())
    split_paths = ds::read_per_split_data_args_file(a.per_split_data_args_path);
  try {
    g.split_rounding = ds::parse_split_rounding(a.split_rounding);  // before the paths: it decides blends
    if (!data_path.empty()) ds::set_data_path(g, data_path);
    for (size_t i = 0; i < 3; ++i)
      if (!split_paths[i].empty()) ds::set_split_data_path(g, static_cast<ds::SplitIndex>(i), split_paths[i]);
    g.naming = ds::parse_cache_naming(a.cache_naming);
  } catch (const suite::ToolError& e) {
    throw suite::UsageError(e.what());
  }
  g.split = a.split;
  g.mid_level_surplus = a.mid_level_dataset_surplus;
  g.seed = uint32_t(a.seed);
  g.cache_dir = a.data_cache_path;
  g.blend_size_requested = true;  // the trainer reads exactly the requested samples
  ds::TrainingSchedule sched;
  sched.train_iters = uint64_t(train_iters);
  if (a.train_samples > 0) sched.train_samples = uint64_t(a.train_samples);
  sched.global_batch_size = uint64_t(a.global_batch_size);
  sched.eval_interval = uint64_t(a.eval_interval);
  sched.eval_iters = uint64_t(a.eval_iters);
  g.samples = ds::requested_sample_counts(sched);
  g.samples.test = 0;  // the trainer has no test pass
  return d;
}

}  // namespace gpt
