#include "common/dataset/data_flags.h"

#include "common/cli/error.h"
#include "common/dataset/data_args_file.h"

namespace suite::dataset {
namespace {

bool has_split_words(const DataFlags& f) {
  return !f.split_data_path[0].empty() || !f.split_data_path[1].empty() || !f.split_data_path[2].empty();
}

bool per_split(const DataFlags& f) { return has_split_words(f) || !f.per_split_data_args_path.empty(); }

bool one_path(const DataFlags& f) { return !f.data_path.empty() || !f.data_args_path.empty(); }

void usage(bool ok, const std::string& message) {
  if (!ok) throw UsageError(message);
}

}  // namespace

bool has_data(const DataFlags& f) { return one_path(f) || per_split(f); }

void check_data_flags(const DataFlags& f) {
  usage(f.data_path.empty() || f.data_args_path.empty(), "--data-path and --data-args-path exclude each other");
  usage(!has_split_words(f) || f.per_split_data_args_path.empty(),
        "--train/valid/test-data-path and --per-split-data-args-path exclude each other");
  usage(!one_path(f) || !per_split(f), "--data-path and --train/valid/test-data-path exclude each other");
  usage(!has_split_words(f) || !f.split_data_path[0].empty(),
        "--valid-data-path and --test-data-path need --train-data-path");
  usage(f.split_rounding == "legacy" || f.split_rounding == "core",
        "--split-rounding must be legacy or core, got '" + f.split_rounding + "'");
  usage(f.mid_level_surplus >= 0, "--mid-level-dataset-surplus must be >= 0");
  usage(!f.mid_level_surplus_given || f.split_rounding == "core",
        "--mid-level-dataset-surplus is Megatron-core's: give --split-rounding core (legacy blends add 0.5%)");
}

void apply_data_flags(const DataFlags& f, GptDatasetConfig& config) {
  std::vector<std::string> words = f.data_path;
  if (!f.data_args_path.empty()) words = read_data_args_file(f.data_args_path);
  std::array<std::vector<std::string>, 3> split_words = f.split_data_path;
  if (!f.per_split_data_args_path.empty()) {
    split_words = read_per_split_data_args_file(f.per_split_data_args_path);
    if (split_words[0].empty() && split_words[1].empty() && split_words[2].empty())
      throw ToolError(f.per_split_data_args_path, "names no dataset for any split");
  }
  try {
    config.split_rounding = parse_split_rounding(f.split_rounding);  // before the paths: it decides blends
    config.mid_level_surplus = f.mid_level_surplus;
    if (!words.empty()) set_data_path(config, words);
    for (size_t i = 0; i < 3; ++i)
      if (!split_words[i].empty()) set_split_data_path(config, static_cast<SplitIndex>(i), split_words[i]);
  } catch (const ToolError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace suite::dataset
