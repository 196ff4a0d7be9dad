// build-indexmap: Megatron GPT index maps (doc_idx, sample_idx, shuffle_idx .npy) for the
// train/valid/test splits of a dataset or of a weighted blend, plus the blending indices,
// byte-identical to legacy Megatron (megatron/data/gpt_dataset.py, helpers.cpp, cd760a9e0e).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/dataset/blending.h"
#include "common/dataset/index_map.h"
#include "common/dataset/index_map_cache.h"
#include "common/dataset/indexed_dataset.h"
#include "common/dataset/npy.h"
#include "common/dataset/sample_counts.h"
#include "common/dataset/split.h"
#include "common/tokenizer/bpe_model.h"

namespace suite {
namespace {

namespace ds = suite::dataset;
namespace fs = std::filesystem;

constexpr const char* kDetails =
    "Sample counts: --train-samples/--valid-samples/--test-samples directly, or Megatron's schedule\n"
    "  train = --train-iters x --global-batch-size, valid = (train_iters // --eval-interval + 1) x\n"
    "  --eval-iters x --global-batch-size, test = --eval-iters x --global-batch-size (a direct count\n"
    "  overrides its split). A split with 0 samples is skipped.\n"
    "Files: classic names {prefix}_{split}_indexmap_{N}ns_{L}sl_{seed}s_{doc,sample,shuffle}_idx.npy next\n"
    "  to the data (under --data-cache-path DIR if given), or with --cache-naming md5 Megatron's 2023\n"
    "  {md5}.dsc + {md5}_{doc,sample,shuffle}_idx.npy in DIR (default {data dir}/index-cache).\n"
    "  Existing complete maps are checked (dtype, shape) and kept; --force rebuilds them.\n"
    "Blend (--data-path \"0.3 A 0.7 B\"): each component gets ceil(N x w x 1.005) samples per split (its own\n"
    "  index maps), and blend_{w...}_{size}_{dataset_index,dataset_sample_index}.npy (int16, int64) go\n"
    "  to --data-cache-path or the first component's directory; size = sum of the component counts as\n"
    "  legacy Megatron, or --blend-size N (what a trainer asking for exactly N samples uses).\n";

std::vector<std::string> split_words(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  for (const auto& a : args) {
    std::istringstream in(a);
    std::string w;
    while (in >> w) words.push_back(w);
  }
  return words;
}

struct Args {
  std::vector<std::string> weight_words;  // as typed, for blend file names
  std::vector<ds::BlendComponent> components;
  std::string split;
  uint32_t seq_length = 0;
  uint32_t seed = 1234;
  ds::SampleCounts counts;
  std::string cache_dir;  // --data-cache-path
  bool md5 = false;
  bool force = false;
  std::optional<uint64_t> blend_size;
  bool quiet = false;
};

uint64_t split_count(const ds::SampleCounts& c, ds::SplitIndex s) {
  return s == ds::SplitIndex::Train ? c.train : s == ds::SplitIndex::Valid ? c.valid : c.test;
}

ds::IndexMapFiles files_for(const Args& a, const std::string& prefix, const ds::IndexMapConfig& cfg,
                            std::string* description) {
  if (a.md5) {
    *description = ds::md5_index_map_description(prefix, cfg.split, cfg.num_samples, cfg.seq_length, cfg.seed, a.split);
    std::string dir = a.cache_dir.empty() ? ds::default_index_cache_dir(prefix) : a.cache_dir;
    return ds::md5_index_map_files(dir, *description);
  }
  description->clear();
  std::string where = prefix;
  if (!a.cache_dir.empty()) where = (fs::path(a.cache_dir) / fs::path(prefix).filename()).string();
  return ds::classic_index_map_files(where, cfg.split, cfg.num_samples, cfg.seq_length, cfg.seed);
}

// One component's index map for one split: loaded when complete files exist (and !force or
// !write), else built (and saved when `write`).
std::shared_ptr<ds::IndexMap> index_map_for(const Args& a, const std::string& prefix, const ds::IndexedDataset& data,
                                            ds::SplitIndex s, uint64_t n, bool write) {
  ds::IndexMapConfig cfg;
  cfg.split = std::string(ds::split_name(s));
  cfg.num_samples = n;
  cfg.seq_length = a.seq_length;
  cfg.seed = a.seed;
  const uint64_t size = data.sequence_count();
  const ds::SequenceRange range = ds::split_range_legacy(a.split, size, s);
  std::string description;
  ds::IndexMapFiles files = files_for(a, prefix, cfg, &description);
  if (ds::index_map_files_exist(files) && !(write && a.force)) {
    auto map = std::make_shared<ds::IndexMap>(ds::load_index_map(files));
    if (write && !a.quiet)
      std::printf("%s %s: %llu samples requested; kept existing %s (%llu samples)\n", prefix.c_str(), cfg.split.c_str(),
                  (unsigned long long)n, files.doc_idx.c_str(), (unsigned long long)map->size());
    return map;
  }
  std::shared_ptr<ds::IndexMap> map;
  try {
    map = std::make_shared<ds::IndexMap>(ds::build_index_map(data.sequence_lengths(), range, cfg));
  } catch (const ToolError& e) {
    auto b = ds::split_boundaries_legacy(a.split, size);
    throw ToolError(prefix, std::string(e.what()) + " [--split '" + a.split + "' over " + std::to_string(size) +
                                " sequences gives train [" + std::to_string(b[0]) + ", " + std::to_string(b[1]) +
                                "), valid [" + std::to_string(b[1]) + ", " + std::to_string(b[2]) + "), test [" +
                                std::to_string(b[2]) + ", " + std::to_string(b[3]) + ")]");
  }
  if (write) {
    if (a.md5 || !a.cache_dir.empty()) fs::create_directories(fs::path(files.doc_idx).parent_path());
    ds::save_index_map(*map, files, description);
    if (!a.quiet)
      std::printf("%s %s: %llu samples requested, sequences [%llu, %llu), %llu tokens per epoch, %llu epochs%s, "
                  "%llu samples -> %s\n",
                  prefix.c_str(), cfg.split.c_str(), (unsigned long long)n, (unsigned long long)range.begin,
                  (unsigned long long)range.end, (unsigned long long)map->plan.tokens_per_epoch,
                  (unsigned long long)map->plan.epochs, map->plan.separate_last_epoch ? " (last one separate)" : "",
                  (unsigned long long)map->size(), files.doc_idx.c_str());
  }
  return map;
}

std::string blend_file(const Args& a, uint64_t size, const char* what) {
  std::string name = "blend";
  for (const auto& w : a.weight_words) name += "_" + w;
  name += "_" + std::to_string(size) + "_" + what + ".npy";
  fs::path dir = a.cache_dir.empty() ? fs::path(a.components[0].prefix).parent_path() : fs::path(a.cache_dir);
  return (dir / name).string();
}

void print_tokens(const std::vector<int64_t>& tokens, const std::shared_ptr<const bpe::BpeModel>& model) {
  std::string line = "ids:";
  for (int64_t t : tokens) line += " " + std::to_string(t);
  std::printf("%s\n", line.c_str());
  if (model) {
    std::vector<bpe::TokenId> ids;
    for (int64_t t : tokens) {
      if (t < 0 || static_cast<uint64_t>(t) >= model->vocab_size())
        throw ToolError("token " + std::to_string(t) + " is not in the vocabulary (" +
                        std::to_string(model->vocab_size()) + " tokens)");
      ids.push_back(static_cast<bpe::TokenId>(t));
    }
    std::printf("text:\n%s\n", model->decode(ids).c_str());
  }
}

int body(int argc, char** argv) {
  Cli cli({.name = "build-indexmap",
           .summary = "Build Megatron GPT index maps (doc/sample/shuffle_idx .npy) and blending indices.",
           .example =
               "  build-indexmap --data-path data/crawl_text_document --split 949,50,1 --seq-length 1024 \\\n"
               "      --train-iters 20000 --global-batch-size 512 --eval-interval 1000 --eval-iters 10\n"
               "      # -> data/crawl_text_document_{train,valid,test}_indexmap_{N}ns_1024sl_1234s_*_idx.npy\n"
               "  build-indexmap --data-path \"0.3 data/wiki_text_document 0.7 data/web_text_document\" \\\n"
               "      --seq-length 2048 --train-samples 100000 --data-cache-path cache\n"
               "  build-indexmap --data-path data/crawl_text_document --seq-length 1024 --train-samples 1000 \\\n"
               "      --print-sample 7 --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt",
           .reads_text = false,
           .multi_input = false,
           .has_output = false,
           .details = kDetails});
  cli.options().add_options()
      ("data-path", po::value<std::vector<std::string>>()->multitoken(),
       "dataset prefix, or a blend \"w1 prefix1 w2 prefix2 ...\" (one string or several words)")
      ("split", po::value<std::string>()->default_value("969, 30, 1"), "train,valid,test weights (Megatron's default)")
      ("seq-length", po::value<uint32_t>(), "sequence length L (samples hold L+1 tokens)")
      ("seed", po::value<uint32_t>()->default_value(1234), "RandomState seed")
      ("train-samples", po::value<uint64_t>(), "train samples")
      ("valid-samples", po::value<uint64_t>(), "valid samples")
      ("test-samples", po::value<uint64_t>(), "test samples")
      ("train-iters", po::value<uint64_t>(), "training iterations (Megatron schedule)")
      ("global-batch-size", po::value<uint64_t>(), "global batch size (Megatron schedule)")
      ("eval-interval", po::value<uint64_t>()->default_value(1000), "iterations between evaluations")
      ("eval-iters", po::value<uint64_t>()->default_value(100), "iterations per evaluation")
      ("data-cache-path", po::value<std::string>(), "directory for the index maps (and blend files)")
      ("cache-naming", po::value<std::string>()->default_value("classic"), "classic (<= 2023-05) or md5 (2023)")
      ("blend-size", po::value<uint64_t>(), "blend: length of the blending indices (default: sum of component counts)")
      ("force", po::bool_switch(), "rebuild index maps even when complete files exist")
      ("print-sample", po::value<uint64_t>(), "J: print sample J of --split-name (writes nothing)")
      ("split-name", po::value<std::string>()->default_value("train"), "train, valid or test (for --print-sample)")
      ("vocab-file", po::value<std::string>(), "GPT-2 vocab.json (to show sample text)")
      ("merge-file", po::value<std::string>(), "GPT-2 merges.txt (to show sample text)");
  CommonOptions options = cli.parse(argc, argv);
  const auto& vm = cli.vm();

  if (!vm.count("data-path")) throw UsageError("--data-path is required");
  if (!vm.count("seq-length")) throw UsageError("--seq-length is required");
  if (vm.count("vocab-file") != vm.count("merge-file")) throw UsageError("--vocab-file and --merge-file go together");
  Args a;
  a.quiet = options.quiet;
  auto words = split_words(vm["data-path"].as<std::vector<std::string>>());
  try {
    a.components = ds::parse_blend(words);
  } catch (const ToolError& e) {
    throw UsageError(e.what());
  }
  if (a.components.size() > 1)
    for (size_t i = 0; i < words.size(); i += 2) a.weight_words.push_back(words[i]);
  a.split = vm["split"].as<std::string>();
  try {
    (void)ds::parse_split_weights(a.split);
  } catch (const ToolError& e) {
    throw UsageError(e.what());
  }
  a.seq_length = vm["seq-length"].as<uint32_t>();
  if (a.seq_length == 0) throw UsageError("--seq-length must be at least 1");
  a.seed = vm["seed"].as<uint32_t>();
  const std::string naming = vm["cache-naming"].as<std::string>();
  if (naming != "classic" && naming != "md5") throw UsageError("--cache-naming must be classic or md5, got '" + naming + "'");
  a.md5 = naming == "md5";
  if (vm.count("data-cache-path")) a.cache_dir = vm["data-cache-path"].as<std::string>();
  a.force = vm["force"].as<bool>();
  if (vm.count("blend-size")) {
    if (a.components.size() < 2) throw UsageError("--blend-size needs a blend in --data-path");
    a.blend_size = vm["blend-size"].as<uint64_t>();
  }

  if (vm.count("train-iters")) {
    if (!vm.count("global-batch-size")) throw UsageError("--train-iters needs --global-batch-size");
    ds::TrainingSchedule sched;
    sched.train_iters = vm["train-iters"].as<uint64_t>();
    sched.global_batch_size = vm["global-batch-size"].as<uint64_t>();
    sched.eval_interval = vm["eval-interval"].as<uint64_t>();
    sched.eval_iters = vm["eval-iters"].as<uint64_t>();
    if (vm.count("train-samples")) sched.train_samples = vm["train-samples"].as<uint64_t>();
    try {
      a.counts = ds::requested_sample_counts(sched);
    } catch (const ToolError& e) {
      throw UsageError(e.what());
    }
  } else {
    if (vm.count("global-batch-size")) throw UsageError("--global-batch-size needs --train-iters");
    if (vm.count("train-samples")) a.counts.train = vm["train-samples"].as<uint64_t>();
  }
  if (vm.count("valid-samples")) a.counts.valid = vm["valid-samples"].as<uint64_t>();
  if (vm.count("test-samples")) a.counts.test = vm["test-samples"].as<uint64_t>();

  // Datasets, opened (and validated) once each.
  std::map<std::string, std::unique_ptr<ds::IndexedDataset>> opened;
  auto dataset = [&](const std::string& prefix) -> const ds::IndexedDataset& {
    auto& d = opened[prefix];
    if (!d) d = std::make_unique<ds::IndexedDataset>(prefix);
    return *d;
  };
  for (const auto& c : a.components) dataset(c.prefix);

  const ds::SplitIndex all[] = {ds::SplitIndex::Train, ds::SplitIndex::Valid, ds::SplitIndex::Test};

  if (vm.count("print-sample")) {
    const std::string name = vm["split-name"].as<std::string>();
    ds::SplitIndex s;
    if (name == "train") s = ds::SplitIndex::Train;
    else if (name == "valid") s = ds::SplitIndex::Valid;
    else if (name == "test") s = ds::SplitIndex::Test;
    else throw UsageError("--split-name must be train, valid or test, got '" + name + "'");
    const uint64_t n = split_count(a.counts, s);
    if (n == 0) throw UsageError("--print-sample: no " + name + " samples requested (give --" + name + "-samples or --train-iters)");
    const uint64_t j = vm["print-sample"].as<uint64_t>();
    std::shared_ptr<const bpe::BpeModel> model;
    if (vm.count("vocab-file"))
      model = bpe::BpeModel::load(vm["vocab-file"].as<std::string>(), vm["merge-file"].as<std::string>());
    size_t part = 0;
    uint64_t k = j;
    uint64_t component_n = n;
    if (a.components.size() > 1) {
      auto plan = ds::plan_blend(a.components, n);
      uint64_t size = a.blend_size.value_or(0);
      if (!a.blend_size)
        for (uint64_t c : plan.component_samples) size += c;
      if (j >= size) throw ToolError(name + " sample " + std::to_string(j) + " out of range (the blend has " + std::to_string(size) + ")");
      auto bi = ds::build_blending_indices(plan.blend_weights, j + 1);  // prefix-stable: only up to j
      part = static_cast<size_t>(bi.dataset_index[j]);
      k = static_cast<uint64_t>(bi.dataset_sample_index[j]);
      component_n = plan.component_samples[part];
    }
    const auto& prefix = a.components[part].prefix;
    const auto& data = dataset(prefix);
    auto map = index_map_for(a, prefix, data, s, component_n, false);
    if (k >= map->size())
      throw ToolError(prefix, name + " sample " + std::to_string(k) + " out of range (the index map has " +
                                  std::to_string(map->size()) + " samples)");
    auto tokens = ds::read_sample(*map, data, k);
    std::printf("%s sample %llu: %s sample %llu, %zu tokens\n", name.c_str(), (unsigned long long)j, prefix.c_str(),
                (unsigned long long)k, tokens.size());
    print_tokens(tokens, model);
    return 0;
  }

  if (a.counts.train == 0 && a.counts.valid == 0 && a.counts.test == 0)
    throw UsageError("no samples requested: give --train-samples/--valid-samples/--test-samples or --train-iters "
                     "with --global-batch-size");

  for (ds::SplitIndex s : all) {
    const uint64_t n = split_count(a.counts, s);
    if (n == 0) continue;
    if (a.components.size() == 1) {
      index_map_for(a, a.components[0].prefix, dataset(a.components[0].prefix), s, n, true);
      continue;
    }
    auto plan = ds::plan_blend(a.components, n);
    uint64_t size = 0;
    for (size_t i = 0; i < a.components.size(); ++i) {
      index_map_for(a, a.components[i].prefix, dataset(a.components[i].prefix), s, plan.component_samples[i], true);
      size += plan.component_samples[i];
    }
    if (a.blend_size) size = *a.blend_size;
    auto bi = ds::build_blending_indices(plan.blend_weights, size);
    const std::string fi = blend_file(a, size, "dataset_index"), fs_ = blend_file(a, size, "dataset_sample_index");
    if (!a.cache_dir.empty()) fs::create_directories(a.cache_dir);
    ds::write_npy(fi, ds::NpyArray::from(bi.dataset_index));
    ds::write_npy(fs_, ds::NpyArray::from(bi.dataset_sample_index));
    if (!a.quiet)
      std::printf("blend %s: %llu samples requested, %llu blended -> %s, %s\n",
                  std::string(ds::split_name(s)).c_str(), (unsigned long long)n, (unsigned long long)size, fi.c_str(),
                  fs_.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("build-indexmap", argc, argv, suite::body); }
