// jsonl-to-mmap: JSONL (text, or token ids from bpe-encode) -> Megatron .bin/.idx datasets,
// byte-identical to Megatron's tools/preprocess_data.py (cd760a9e0e, 2023-10-25); --merge joins
// datasets like tools/merge_datasets.py; --info checks a dataset and prints its figures. The work is in
// common/dataset/jsonl_to_mmap_job.h; this file is the command line.
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/dataset/jsonl_to_mmap_job.h"

namespace suite {
namespace {

namespace ds = suite::dataset;

constexpr const char* kDetails =
    "Input: one JSON object per line. For each --json-keys key K the ids are taken from, in order:\n"
    "  \"K_ids\", \"ids\" (single key only; what bpe-encode writes), K holding an array ([ids], [[ids],...]\n"
    "  sentence ids, or [\"sentence\",...]), or K holding text (tokenized here with --vocab-file/--merge-file,\n"
    "  GPT-2 byte-level BPE, on all --threads). A list of sentences gives one sequence per non-empty\n"
    "  sentence and a sentence-level dataset (PREFIX_K_sentence); otherwise PREFIX_K_document.\n"
    "Documents that tokenize to nothing become zero-sequence documents (Megatron >= 2023-06-26);\n"
    "--append-eod adds the EOD id (the vocabulary's <|endoftext|>, else --eod-id) to non-empty ones.\n"
    "dtype: --dtype if given; else Megatron's rule on the vocabulary size (uint16 below 65500 tokens,\n"
    "  else int32) from --vocab-file or --vocab-size; else uint16, and an id above 65535 is an error\n"
    "  naming file:line (give --vocab-size or --dtype int32). A known vocabulary also bounds the ids.\n"
    "Not supported (refused with a message): --split-sentences on plain text (NLTK Punkt; give sentence\n"
    "  lists instead), --partitions > 1 (use --shard-style runs and --merge), --dataset-impl other than\n"
    "  mmap, tokenizers other than GPT2BPETokenizer.\n"
    "Outputs appear atomically (.bin then .idx); a killed run leaves no pair that --info accepts.\n";

int body(int argc, char** argv) {
  Cli cli({.name = "jsonl-to-mmap",
           .summary = "Build Megatron .bin/.idx datasets from JSONL text or token ids (preprocess_data.py); merge; inspect.",
           .example =
               "  jsonl-to-mmap --input crawl.jsonl.zst --output-prefix data/crawl --vocab-file gpt2-vocab.json \\\n"
               "      --merge-file gpt2-merges.txt --tokenizer-type GPT2BPETokenizer --append-eod --workers 16\n"
               "      # -> data/crawl_text_document.bin/.idx\n"
               "  bpe-encode -i crawl.jsonl.zst --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt --append-eod \\\n"
               "      | jsonl-to-mmap --output-prefix data/crawl --json-keys text\n"
               "  jsonl-to-mmap --merge data/all data/shard0_text_document data/shard1_text_document\n"
               "  jsonl-to-mmap --merge data/all data/shards/        # every dataset in the directory, sorted\n"
               "  jsonl-to-mmap --info data/all --show-doc 3 --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt",
           .has_output = false,
           .details = kDetails});
  cli.options().add_options()
      ("output-prefix", po::value<std::string>(), "output path without suffix: PREFIX_KEY_{document,sentence}.bin/.idx")
      ("append-eod", po::bool_switch(), "end every non-empty document with the EOD token")
      ("split-sentences", po::bool_switch(), "sentence-level output (input must hold sentence lists)")
      ("keep-newlines", po::bool_switch(), "(Punkt option; refused: this tool does not split sentences)")
      ("lang", po::value<std::string>(), "(Punkt option; refused: this tool does not split sentences)")
      ("workers", ranged<int>(1, 4096), "alias of --threads (Megatron's name)")
      ("partitions", ranged<int>(1)->default_value(1), "only 1 (the default) is supported")
      ("chunk-size", ranged<int>(1), "accepted for compatibility; no effect on the output")
      ("log-interval", ranged<uint64_t>(0)->default_value(1000), "documents between progress lines (0: none)")
      ("tokenizer-type", po::value<std::string>()->default_value("GPT2BPETokenizer"), "only GPT2BPETokenizer")
      ("vocab-file", po::value<std::string>(), "GPT-2 vocab.json")
      ("merge-file", po::value<std::string>(), "GPT-2 merges.txt")
      ("dataset-impl", po::value<std::string>()->default_value("mmap"), "only mmap")
      ("dtype", po::value<std::string>(), "token dtype override: uint8 int8 int16 uint16 int32 int64")
      ("vocab-size", ranged<uint64_t>(1, uint64_t{1} << 32), "vocabulary size for ids input without --vocab-file (dtype rule, id bound)")
      ("eod-id", ranged<uint32_t>(0), "EOD id for --append-eod without a vocabulary (default 50256, GPT-2)")
      ("merge", po::value<std::vector<std::string>>()->multitoken(),
       "OUT IN...: concatenate datasets IN (prefixes, or one directory as merge_datasets.py) into OUT")
      ("info", po::value<std::string>(), "PREFIX: validate a dataset and print its counts and token statistics")
      ("show-doc", ranged<uint64_t>(0), "with --info: print document K's ids (and text with --vocab-file)");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);
  const auto& vm = cli.vm();

  if (vm.count("vocab-file") != vm.count("merge-file"))
    throw UsageError("--vocab-file and --merge-file go together");
  const std::string tokenizer = vm["tokenizer-type"].as<std::string>();
  if (tokenizer != "GPT2BPETokenizer")
    throw UsageError("--tokenizer-type " + tokenizer + " is not supported (only GPT2BPETokenizer; for other "
                     "tokenizers give pre-tokenized ids)");
  if (vm["dataset-impl"].as<std::string>() != "mmap")
    throw UsageError("--dataset-impl " + vm["dataset-impl"].as<std::string>() +
                     " is not supported (only mmap; lazy/cached were removed from Megatron in 2023)");
  if (vm["keep-newlines"].as<bool>() || vm.count("lang"))
    throw UsageError("--keep-newlines/--lang configure NLTK Punkt sentence splitting, which this tool does not do; "
                     "give documents as sentence lists instead");
  if (vm["partitions"].as<int>() != 1)
    throw UsageError("--partitions " + std::to_string(vm["partitions"].as<int>()) +
                     " is not supported (its round-robin order differs from the input order); run per shard and "
                     "join with --merge");
  if (vm.count("show-doc") && !vm.count("info")) throw UsageError("--show-doc goes with --info PREFIX");

  const int modes = int(vm.count("merge")) + int(vm.count("info")) + int(vm.count("output-prefix"));
  if (modes != 1) throw UsageError("give exactly one of --output-prefix (convert), --merge OUT IN... or --info PREFIX");

  ds::JsonlToMmapConfig config;
  using Mode = ds::JsonlToMmapConfig::Mode;
  config.mode = vm.count("info") ? Mode::kInfo : vm.count("merge") ? Mode::kMerge : Mode::kConvert;
  if (vm.count("vocab-file")) {
    config.vocab_file = vm["vocab-file"].as<std::string>();
    config.merge_file = vm["merge-file"].as<std::string>();
  }
  if (vm.count("info")) config.info_prefix = vm["info"].as<std::string>();
  if (vm.count("show-doc")) config.show_doc = vm["show-doc"].as<uint64_t>();
  if (vm.count("merge")) {
    config.merge_words = vm["merge"].as<std::vector<std::string>>();
    // Positional words after --merge land in "input" when options intervene; take them too.
    for (const auto& in : options.inputs) config.merge_words.push_back(in);
  }
  if (vm.count("output-prefix")) config.output_prefix = vm["output-prefix"].as<std::string>();
  config.append_eod = vm["append-eod"].as<bool>();
  config.split_sentences = vm["split-sentences"].as<bool>();
  config.log_interval = vm["log-interval"].as<uint64_t>();
  if (vm.count("vocab-size")) config.vocab_size = vm["vocab-size"].as<uint64_t>();
  if (vm.count("eod-id")) config.eod_id = vm["eod-id"].as<uint32_t>();
  if (vm.count("dtype")) config.dtype = vm["dtype"].as<std::string>();
  if (vm.count("workers")) {
    int w = vm["workers"].as<int>();
    if (w < 1) throw UsageError("--workers must be a positive number");
    options.threads = w;
  }
  ds::run_jsonl_to_mmap(options, config);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("jsonl-to-mmap", argc, argv, suite::body); }
