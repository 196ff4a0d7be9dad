#include "common/dataset/gpt_dataset.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "common/cli/error.h"
#include "common/dataset/npy.h"

namespace suite::dataset {
namespace fs = std::filesystem;
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

IndexMapConfig map_config(const GptDatasetConfig& config, SplitIndex split, uint64_t num_samples) {
  IndexMapConfig c;
  c.split = std::string(split_name(split));
  c.num_samples = num_samples;
  c.seq_length = config.seq_length;
  c.seed = config.seed;
  return c;
}

std::string md5_description(const GptDatasetConfig& config, const std::string& prefix, SplitIndex split,
                            uint64_t num_samples) {
  return md5_index_map_description(prefix, split_name(split), num_samples, config.seq_length, config.seed,
                                   config.split);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string mismatch_advice(const std::string& prefix) {
  return " (built for another --split or an earlier tokenization of " + prefix +
         "? delete them, or rebuild them with build-indexmap --force)";
}

// Saves a map at its home; a failure is fatal only under Save::Yes.
IndexMapFiles save_home(const GptDatasetConfig& config, const GptBuildOptions& options, const IndexMap& map,
                        const std::string& prefix, SplitIndex split, uint64_t n) {
  const IndexMapFiles home = index_map_home(config, prefix, split, n);
  try {
    if (config.naming == CacheNaming::Md5 || !config.cache_dir.empty())
      fs::create_directories(fs::path(home.doc_idx).parent_path());
    save_index_map(map, home, config.naming == CacheNaming::Md5 ? md5_description(config, prefix, split, n) : "");
    return home;
  } catch (const std::exception&) {
    if (options.save_maps == GptBuildOptions::Save::Yes) throw;
  }
  return {};
}

// One dataset's index map for one split: found by the policy, else built (and saved).
ComponentMap component_map(const GptDatasetConfig& config, const GptBuildOptions& options,
                           const std::string& prefix, const IndexedDataset& data, SplitIndex split,
                           SequenceRange range, uint64_t n) {
  ComponentMap c;
  c.range = range;
  c.requested = n;
  const auto search = index_map_search(config, prefix, split, n);
  for (size_t i = 0; i < search.size() && !options.force; ++i) {
    const IndexMapFiles& files = search[i];
    if (!index_map_files_exist(files)) continue;
    auto map = std::make_shared<IndexMap>(load_index_map(files));
    const std::string why = index_map_mismatch(*map, data.sequence_lengths(), range, n);
    if (!why.empty())
      throw ToolError(files.doc_idx, "the index maps do not match the data: " + why + mismatch_advice(prefix));
    c.map = std::move(map);
    c.found = files;
    if (i > 0 && options.copy_home && options.save_maps != GptBuildOptions::Save::No)
      c.saved = save_home(config, options, *c.map, prefix, split, n);
    return c;
  }
  try {
    c.map = std::make_shared<IndexMap>(build_index_map(data.sequence_lengths(), range,
                                                       map_config(config, split, n)));
  } catch (const ToolError& e) {
    if (per_split_data(config))
      throw ToolError(prefix, std::string(e.what()) + " [--" + std::string(split_name(split)) + "-data-path: " +
                                  str(data.sequence_count()) + " sequences]");
    std::string ranges;
    for (SplitIndex s : {SplitIndex::Train, SplitIndex::Valid, SplitIndex::Test}) {
      const SequenceRange r = split_range(config.split, data.sequence_count(), s, config.split_rounding);
      ranges += std::string(ranges.empty() ? "" : ", ") + std::string(split_name(s)) + " [" + str(r.begin) + ", " +
                str(r.end) + ")";
    }
    throw ToolError(prefix, std::string(e.what()) + " [--split '" + config.split + "' over " +
                                str(data.sequence_count()) + " sequences gives " + ranges + "]");
  }
  if (options.save_maps != GptBuildOptions::Save::No) c.saved = save_home(config, options, *c.map, prefix, split, n);
  return c;
}

std::string blend_file(const std::vector<std::string>& weight_words, const fs::path& dir, uint64_t size,
                       const char* what) {
  std::string name = "blend";
  for (const auto& w : weight_words) name += "_" + w;
  return (dir / (name + "_" + str(size) + "_" + what + ".npy")).string();
}

// Blending indices read back from files; ToolError naming the file when they do not fit.
BlendingIndices load_blend(const std::array<std::string, 2>& files, uint64_t size, size_t components) {
  const NpyArray di = read_npy(files[0]), si = read_npy(files[1]);
  if (di.dtype != DType::Int16 || di.shape != std::vector<uint64_t>{size})
    throw ToolError(files[0], "descr: must be a 1-D int16 array of " + str(size) + " entries");
  if (si.dtype != DType::Int64 || si.shape != std::vector<uint64_t>{size})
    throw ToolError(files[1], "descr: must be a 1-D int64 array of " + str(size) + " entries");
  BlendingIndices b;
  auto d = di.as<int16_t>();
  auto s = si.as<int64_t>();
  b.dataset_index.assign(d.begin(), d.end());
  b.dataset_sample_index.assign(s.begin(), s.end());
  for (uint64_t j = 0; j < size; ++j) {
    if (b.dataset_index[j] < 0 || static_cast<size_t>(b.dataset_index[j]) >= components)
      throw ToolError(files[0], "[" + str(j) + "] = " + std::to_string(b.dataset_index[j]) +
                                    " is not one of the blend's " + str(components) + " datasets");
    if (b.dataset_sample_index[j] < 0)
      throw ToolError(files[1], "[" + str(j) + "] is negative");
  }
  return b;
}

void blend_indices(const GptDatasetConfig& config, const GptBuildOptions& options, SplitIndex s,
                   const BlendPlan& plan, GptSplit& out) {
  uint64_t size = config.blend_size_requested ? out.requested : plan.size;
  if (config.blend_size) size = *config.blend_size;
  const auto& blend = split_blend(config, s);
  // A blend without weights is named by its components' sizes, which its indices depend on.
  std::vector<std::string> words = split_weight_words(config, s);
  if (words.empty()) {
    words.push_back("sizes");
    for (uint64_t n : plan.component_samples) words.push_back(str(n));
  }
  const fs::path beside = fs::path(blend[0].prefix).parent_path();
  const fs::path home = config.cache_dir.empty() ? beside : fs::path(config.cache_dir);
  const auto files_in = [&](const fs::path& dir) {
    return std::array<std::string, 2>{blend_file(words, dir, size, "dataset_index"),
                                      blend_file(words, dir, size, "dataset_sample_index")};
  };
  // Saving callers only take the files at home; the others also those beside the data.
  std::vector<fs::path> dirs = {home};
  if (!options.save_blend && home != beside) dirs.push_back(beside);
  if (!options.force)
    for (const fs::path& dir : dirs) {
      const auto files = files_in(dir);
      if (!exists(files[0]) || !exists(files[1])) continue;
      out.blend = load_blend(files, size, blend.size());
      out.blend_files = files;
      out.blend_loaded = true;
      return;
    }
  out.blend = build_blending_indices(plan.blend_weights, size);
  if (!options.save_blend) return;
  if (!config.cache_dir.empty()) fs::create_directories(home);
  out.blend_files = files_in(home);
  write_npy(out.blend_files[0], NpyArray::from(out.blend.dataset_index));
  write_npy(out.blend_files[1], NpyArray::from(out.blend.dataset_sample_index));
}

}  // namespace

namespace {

// A prefix or blend from command-line words (one may hold several), and its weights as typed.
// Megatron-core also takes prefixes without weights; legacy Megatron refuses them.
void read_blend(std::span<const std::string> args, SplitRounding rounding, std::vector<BlendComponent>& blend,
                std::vector<std::string>& weight_words) {
  std::vector<std::string> words;
  for (const auto& a : args) {
    std::istringstream in(a);
    std::string w;
    while (in >> w) words.push_back(w);
  }
  weight_words.clear();
  const bool prefixes_only = words.size() > 1 && !words_are_weighted(words);
  if (prefixes_only && rounding == SplitRounding::Core) {
    blend = parse_prefixes(words);
    return;
  }
  try {
    blend = parse_blend(words);
  } catch (const ToolError& e) {
    if (!prefixes_only) throw;
    throw ToolError(std::string(e.what()) + "; prefixes without weights are Megatron-core's (--split-rounding core)");
  }
  if (blend.size() > 1)
    for (size_t i = 0; i < words.size(); i += 2) weight_words.push_back(words[i]);
}

}  // namespace

uint64_t split_samples(const SampleCounts& c, SplitIndex s) {
  return s == SplitIndex::Train ? c.train : s == SplitIndex::Valid ? c.valid : c.test;
}

void set_data_path(GptDatasetConfig& config, std::span<const std::string> args) {
  read_blend(args, config.split_rounding, config.blend, config.weight_words);
}

void set_split_data_path(GptDatasetConfig& config, SplitIndex split, std::span<const std::string> args) {
  const size_t i = static_cast<size_t>(split);
  try {
    read_blend(args, config.split_rounding, config.split_blends[i], config.split_weight_words[i]);
  } catch (const ToolError& e) {
    std::string why = e.what();
    const std::string flag = "--data-path";
    if (why.rfind(flag, 0) == 0) why = why.substr(flag.size());
    throw ToolError("--" + std::string(split_name(split)) + "-data-path" + why);
  }
}

bool per_split_data(const GptDatasetConfig& config) { return config.blend.empty(); }

const std::vector<BlendComponent>& split_blend(const GptDatasetConfig& config, SplitIndex s) {
  return per_split_data(config) ? config.split_blends[static_cast<size_t>(s)] : config.blend;
}

const std::vector<std::string>& split_weight_words(const GptDatasetConfig& config, SplitIndex s) {
  return per_split_data(config) ? config.split_weight_words[static_cast<size_t>(s)] : config.weight_words;
}

std::vector<std::string> data_prefixes(const GptDatasetConfig& config) {
  std::vector<std::string> out;
  for (SplitIndex s : {SplitIndex::Train, SplitIndex::Valid, SplitIndex::Test})
    for (const auto& c : split_blend(config, s))
      if (std::find(out.begin(), out.end(), c.prefix) == out.end()) out.push_back(c.prefix);
  return out;
}

CacheNaming parse_cache_naming(const std::string& name) {
  if (name == "classic") return CacheNaming::Classic;
  if (name == "md5") return CacheNaming::Md5;
  throw ToolError("--cache-naming must be classic or md5, got '" + name + "'");
}

std::vector<IndexMapFiles> index_map_search(const GptDatasetConfig& config, const std::string& prefix,
                                            SplitIndex split, uint64_t n) {
  const std::string name(split_name(split));
  const std::string description = md5_description(config, prefix, split, n);
  std::vector<IndexMapFiles> places = {index_map_home(config, prefix, split, n),
                                       classic_index_map_files(prefix, name, n, config.seq_length, config.seed)};
  if (!config.cache_dir.empty())
    places.push_back(classic_index_map_files((fs::path(config.cache_dir) / fs::path(prefix).filename()).string(),
                                             name, n, config.seq_length, config.seed));
  places.push_back(md5_index_map_files(default_index_cache_dir(prefix), description));
  if (!config.cache_dir.empty()) places.push_back(md5_index_map_files(config.cache_dir, description));
  std::vector<IndexMapFiles> out;
  for (const auto& p : places) {
    bool seen = false;
    for (const auto& q : out) seen = seen || q.doc_idx == p.doc_idx;
    if (!seen) out.push_back(p);
  }
  return out;
}

IndexMapFiles index_map_home(const GptDatasetConfig& config, const std::string& prefix, SplitIndex split,
                             uint64_t n) {
  if (config.naming == CacheNaming::Md5) {
    const std::string dir = config.cache_dir.empty() ? default_index_cache_dir(prefix) : config.cache_dir;
    return md5_index_map_files(dir, md5_description(config, prefix, split, n));
  }
  std::string where = prefix;
  if (!config.cache_dir.empty()) where = (fs::path(config.cache_dir) / fs::path(prefix).filename()).string();
  return classic_index_map_files(where, split_name(split), n, config.seq_length, config.seed);
}

uint64_t GptSplit::size() const {
  if (maps.empty()) return 0;
  return maps.size() == 1 ? maps[0].map->size() : blend.dataset_index.size();
}

std::pair<size_t, uint64_t> GptSplit::locate(uint64_t j) const {
  if (maps.size() == 1) return {0, j};
  return {static_cast<size_t>(blend.dataset_index[j]), static_cast<uint64_t>(blend.dataset_sample_index[j])};
}

GptDatasets::Sample GptDatasets::sample(SplitIndex s, uint64_t j) const {
  const GptSplit& sp = split(s);
  const std::string name(split_name(s));
  if (j >= sp.size())
    throw ToolError(name + " sample " + str(j) + " out of range (the " + (sp.maps.size() > 1 ? "blend" : "split") +
                    " has " + str(sp.size()) + ")");
  Sample out;
  std::tie(out.dataset, out.index) = sp.locate(j);
  const IndexMap& map = *sp.maps[out.dataset].map;
  if (out.index >= map.size())
    throw ToolError(sp.datasets[out.dataset]->idx_file(), name + " sample " + str(out.index) +
                                                           " out of range (the index map has " + str(map.size()) +
                                                           " samples)");
  out.tokens = read_sample(map, *sp.datasets[out.dataset], out.index);
  return out;
}

std::vector<std::string> build_report(const GptDatasetConfig& config, const GptDatasets& built) {
  std::vector<std::string> lines;
  for (SplitIndex s : {SplitIndex::Train, SplitIndex::Valid, SplitIndex::Test}) {
    const GptSplit& split = built.split(s);
    for (size_t i = 0; i < split.maps.size(); ++i) {
      const ComponentMap& m = split.maps[i];
      std::string line = split_blend(config, s)[i].prefix + " " + std::string(split_name(s)) + ": " + str(m.requested) +
                         " samples requested";
      if (!m.found.doc_idx.empty()) {
        line += "; " + std::string(m.saved.doc_idx.empty() ? "kept existing " : "copied ") + m.found.doc_idx + " (" +
                str(m.map->size()) + " samples)";
        if (!m.saved.doc_idx.empty()) line += " -> " + m.saved.doc_idx;
      } else {
        const IndexMapPlan& p = m.map->plan;
        line += ", sequences [" + str(m.range.begin) + ", " + str(m.range.end) + "), " + str(p.tokens_per_epoch) +
                " tokens per epoch, " + str(p.epochs) + " epochs" +
                (p.separate_last_epoch ? " (last one separate)" : "") +
                ", " + str(m.map->size()) + " samples -> " + (m.saved.doc_idx.empty() ? "memory" : m.saved.doc_idx);
      }
      lines.push_back(line);
    }
    if (split.maps.size() > 1)
      lines.push_back("blend " + std::string(split_name(s)) + ": " + str(split.requested) + " samples requested, " +
                      str(split.size()) + " blended" + (split.blend_loaded ? " from " : " -> ") +
                      split.blend_files[0] + ", " + split.blend_files[1]);
  }
  return lines;
}

std::vector<std::shared_ptr<const IndexedDataset>> open_gpt_datasets(const GptDatasetConfig& config) {
  std::vector<std::shared_ptr<const IndexedDataset>> out;
  for (const auto& prefix : data_prefixes(config)) {
    if (!indexed_dataset_exists(prefix))
      throw ToolError(prefix, "dataset not found (need " + prefix + ".bin and " + prefix + ".idx)");
    out.push_back(std::make_shared<const IndexedDataset>(prefix));
  }
  return out;
}

GptDatasets build_gpt_datasets(const GptDatasetConfig& config,
                               std::vector<std::shared_ptr<const IndexedDataset>> datasets,
                               const GptBuildOptions& options) {
  GptDatasets out;
  out.datasets = std::move(datasets);
  const std::vector<std::string> prefixes = data_prefixes(config);
  const auto opened = [&](const std::string& prefix) {
    const size_t i = static_cast<size_t>(std::find(prefixes.begin(), prefixes.end(), prefix) - prefixes.begin());
    if (i >= out.datasets.size()) throw ToolError(prefix, "dataset not opened");
    return out.datasets[i];
  };
  for (SplitIndex s : {SplitIndex::Train, SplitIndex::Valid, SplitIndex::Test}) {
    const uint64_t n = split_samples(config.samples, s);
    const auto& blend = split_blend(config, s);
    if (n == 0 || blend.empty()) continue;
    GptSplit& split = out.splits[static_cast<size_t>(s)];
    split.requested = n;
    std::vector<SequenceRange> ranges;
    bool empty = false;
    for (const auto& c : blend) {
      split.datasets.push_back(opened(c.prefix));
      const uint64_t count = split.datasets.back()->sequence_count();
      ranges.push_back(per_split_data(config) ? SequenceRange{0, count}
                                              : split_range(config.split, count, s, config.split_rounding));
      empty = empty || ranges.back().empty();
    }
    if (empty && options.empty_split_ok) {
      split.datasets.clear();
      continue;
    }
    const bool blended = blend.size() > 1;
    // Prefixes without weights (Megatron-core): one epoch of each, weighted by its samples.
    const bool sized = blended && split_weight_words(config, s).empty();
    BlendPlan plan;
    if (blended && !sized) plan = plan_blend(blend, n, config.split_rounding, config.mid_level_surplus);
    for (size_t i = 0; i < blend.size(); ++i)
      split.maps.push_back(component_map(config, options, blend[i].prefix, *split.datasets[i], s, ranges[i],
                                         !blended ? n : sized ? 1 : plan.component_samples[i]));
    if (sized) {
      std::vector<uint64_t> sizes;
      for (const auto& m : split.maps) sizes.push_back(m.map->size());
      plan = plan_sized_blend(sizes, n);
      if (config.blend_size_requested && n > plan.size)
        throw ToolError(std::string(split_name(s)) + " blend of prefixes without weights: " + str(n) +
                        " samples requested, one epoch of its datasets holds " + str(plan.size) +
                        " (give weights to draw more)");
    }
    if (blended) blend_indices(config, options, s, plan, split);
  }
  return out;
}

}  // namespace suite::dataset
