#include "train/loop/data_args.h"

#include "common/cli/error.h"
#include "common/dataset/data_flags.h"

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
  ds::apply_data_flags(a.data, g);
  try {
    g.naming = ds::parse_cache_naming(a.cache_naming);
  } catch (const suite::ToolError& e) {
    throw suite::UsageError(e.what());
  }
  g.split = a.split;
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
