// build-indexmap: Megatron GPT index maps (doc_idx, sample_idx, shuffle_idx .npy) for the
// train/valid/test splits of a dataset or of a blend, plus the blending indices, byte-identical to
// legacy Megatron (megatron/data/gpt_dataset.py, helpers.cpp, cd760a9e0e) or, under
// --split-rounding core, to Megatron-core (megatron/core/datasets, d98e8a6).
#include <cstdio>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/dataset/data_flags.h"
#include "common/dataset/gpt_dataset.h"
#include "common/tokenizer/bpe_model.h"

namespace suite {
namespace {

namespace ds = suite::dataset;

constexpr const char* kDetails =
    "Sample counts: --train-samples/--valid-samples/--test-samples directly, or Megatron's schedule\n"
    "  train = --train-iters x --global-batch-size, valid = (train_iters // --eval-interval + 1) x\n"
    "  --eval-iters x --global-batch-size, test = --eval-iters x --global-batch-size (a direct count\n"
    "  overrides its split). A split with 0 samples is skipped.\n"
    "Per-split data: --train-data-path, --valid-data-path, --test-data-path (each a prefix or a blend)\n"
    "  replace --data-path and --split as in Megatron: each split reads its own datasets whole, and a\n"
    "  split without one is not built. Megatron-core's --data-args-path FILE (the words of --data-path)\n"
    "  and --per-split-data-args-path FILE.json ({\"train\": ..., \"valid\": ..., \"test\": ...}, each a\n"
    "  string of words, a list or null) take lists too long for a command line.\n"
    "Split ranges: --split-rounding legacy rounds each share and shifts the boundaries (megatron/data);\n"
    "  core rounds the cumulative shares (megatron/core, today's pretrain_gpt.py). They can differ by\n"
    "  a sequence at a boundary; a map made under the other rule is refused (--force rebuilds).\n"
    "Files: classic names {prefix}_{split}_indexmap_{N}ns_{L}sl_{seed}s_{doc,sample,shuffle}_idx.npy next\n"
    "  to the data (in --data-cache-path DIR if given), or with --cache-naming md5 Megatron's 2023\n"
    "  {md5}.dsc + {md5}_{doc,sample,shuffle}_idx.npy in DIR (default {data dir}/index-cache): where\n"
    "  gpt-train looks first. Maps there are checked against the data and kept, maps where gpt-train\n"
    "  also looks (other names, other place) copied there; --force rebuilds.\n"
    "Blend (--data-path \"0.3 A 0.7 B\"): each component gets ceil(N x w x 1.005) samples per split under\n"
    "  legacy rounding, ceil(ceil(N x w) x 1.005) under core (its own index maps), and\n"
    "  blend_{w...}_{size}_{dataset_index,dataset_sample_index}.npy (int16, int64) go to\n"
    "  --data-cache-path or the first component's directory; size = Megatron's own (legacy: the sum of\n"
    "  the component counts; core: the sum of ceil(N x w)), or --blend-size N (what a trainer asking\n"
    "  for exactly N samples uses).\n"
    "  Under core, prefixes without weights (--data-path A B) blend one epoch of each dataset's split,\n"
    "  weighted by its samples, into min(N, their sum): blend_sizes_{n...}_{size}_*.npy.\n";

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
      ("train-data-path", po::value<std::vector<std::string>>()->multitoken(),
       "instead of --data-path and --split: the train split's own prefix or blend, read whole")
      ("valid-data-path", po::value<std::vector<std::string>>()->multitoken(), "the same for the valid split")
      ("test-data-path", po::value<std::vector<std::string>>()->multitoken(), "the same for the test split")
      ("data-args-path", po::value<std::string>(), "a file holding the words of --data-path (Megatron-core)")
      ("per-split-data-args-path", po::value<std::string>(),
       "a JSON file {\"train\": ..., \"valid\": ..., \"test\": ...} holding the per-split data paths")
      ("split", po::value<std::string>()->default_value("969, 30, 1"), "train,valid,test weights (Megatron's default)")
      ("split-rounding", po::value<std::string>()->default_value("legacy"),
       "legacy (megatron/data) or core (megatron/core): how the weights become sequence ranges")
      ("mid-level-dataset-surplus", po::value<double>()->default_value(ds::kMidLevelSurplus),
       "core blends: each component builds ceil(its share x (1 + this)) samples (Megatron-core)")
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
  auto count = [&](const char* flag) -> uint64_t { return vm.count(flag) ? vm[flag].as<uint64_t>() : 0; };

  ds::DataFlags data;
  const char* split_flags[] = {"train-data-path", "valid-data-path", "test-data-path"};
  if (vm.count("data-path")) data.data_path = vm["data-path"].as<std::vector<std::string>>();
  for (size_t i = 0; i < 3; ++i)
    if (vm.count(split_flags[i])) data.split_data_path[i] = vm[split_flags[i]].as<std::vector<std::string>>();
  if (vm.count("data-args-path")) data.data_args_path = vm["data-args-path"].as<std::string>();
  if (vm.count("per-split-data-args-path")) data.per_split_data_args_path = vm["per-split-data-args-path"].as<std::string>();
  data.split_rounding = vm["split-rounding"].as<std::string>();
  data.mid_level_surplus = vm["mid-level-dataset-surplus"].as<double>();
  data.mid_level_surplus_given = !vm["mid-level-dataset-surplus"].defaulted();
  ds::check_data_flags(data);
  if (!ds::has_data(data)) throw UsageError("--data-path (or --train-data-path and its kin) is required");
  if (!vm.count("seq-length")) throw UsageError("--seq-length is required");
  if (vm.count("vocab-file") != vm.count("merge-file")) throw UsageError("--vocab-file and --merge-file go together");
  ds::GptDatasetConfig c;
  ds::apply_data_flags(data, c);
  try {
    c.split = vm["split"].as<std::string>();
    c.naming = ds::parse_cache_naming(vm["cache-naming"].as<std::string>());
    // --split read as the chosen Megatron reads it (core takes any separators between the numbers).
    (void)ds::split_range(c.split, 1, ds::SplitIndex::Train, c.split_rounding);
  } catch (const ToolError& e) {
    throw UsageError(e.what());
  }
  c.seq_length = vm["seq-length"].as<uint32_t>();
  if (c.seq_length == 0) throw UsageError("--seq-length must be at least 1");
  c.seed = vm["seed"].as<uint32_t>();
  if (vm.count("data-cache-path")) c.cache_dir = vm["data-cache-path"].as<std::string>();
  if (vm.count("blend-size")) {
    bool blended = false;
    for (auto s : {ds::SplitIndex::Train, ds::SplitIndex::Valid, ds::SplitIndex::Test})
      blended = blended || ds::split_blend(c, s).size() > 1;
    if (!blended) throw UsageError("--blend-size needs a blend in --data-path");
    c.blend_size = count("blend-size");
  }
  if (vm.count("train-iters")) {
    if (!vm.count("global-batch-size")) throw UsageError("--train-iters needs --global-batch-size");
    ds::TrainingSchedule sched{count("train-iters"), {}, count("global-batch-size"), count("eval-interval"),
                               count("eval-iters")};
    if (vm.count("train-samples")) sched.train_samples = count("train-samples");
    try {
      c.samples = ds::requested_sample_counts(sched);
    } catch (const ToolError& e) {
      throw UsageError(e.what());
    }
  } else {
    if (vm.count("global-batch-size")) throw UsageError("--global-batch-size needs --train-iters");
    c.samples.train = count("train-samples");
  }
  if (vm.count("valid-samples")) c.samples.valid = count("valid-samples");
  if (vm.count("test-samples")) c.samples.test = count("test-samples");

  if (vm.count("print-sample")) {  // only that split, built in memory where it is not cached
    const std::string name = vm["split-name"].as<std::string>();
    const int si = name == "train" ? 0 : name == "valid" ? 1 : name == "test" ? 2 : -1;
    if (si < 0) throw UsageError("--split-name must be train, valid or test, got '" + name + "'");
    const auto s = static_cast<ds::SplitIndex>(si);
    uint64_t* counts[] = {&c.samples.train, &c.samples.valid, &c.samples.test};
    const uint64_t n = *counts[static_cast<size_t>(s)];
    if (n == 0)
      throw UsageError("--print-sample: no " + name + " samples requested (give --" + name +
                       "-samples or --train-iters)");
    c.samples = {};
    *counts[static_cast<size_t>(s)] = n;
    std::shared_ptr<const bpe::BpeModel> model;
    if (vm.count("vocab-file"))
      model = bpe::BpeModel::load(vm["vocab-file"].as<std::string>(), vm["merge-file"].as<std::string>());
    const auto built =
        ds::build_gpt_datasets(c, ds::open_gpt_datasets(c), {.save_maps = ds::GptBuildOptions::Save::No});
    const uint64_t j = vm["print-sample"].as<uint64_t>();
    const auto sample = built.sample(s, j);
    std::printf("%s sample %llu: %s sample %llu, %zu tokens\n", name.c_str(), (unsigned long long)j,
                ds::split_blend(c, s)[sample.dataset].prefix.c_str(), (unsigned long long)sample.index,
                sample.tokens.size());
    print_tokens(sample.tokens, model);
    return 0;
  }

  if (c.samples.train == 0 && c.samples.valid == 0 && c.samples.test == 0)
    throw UsageError("no samples requested: give --train-samples/--valid-samples/--test-samples or --train-iters "
                     "with --global-batch-size");
  const auto built = ds::build_gpt_datasets(
      c, ds::open_gpt_datasets(c), {.save_blend = true, .force = vm["force"].as<bool>(), .copy_home = true});
  if (!options.quiet)
    for (const std::string& line : ds::build_report(c, built)) std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("build-indexmap", argc, argv, suite::body); }
