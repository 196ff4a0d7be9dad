// bpe-train: learn a GPT-2 style byte-level BPE vocabulary (vocab.json + merges.txt) from JSONL
// documents or plain text lines. The work is in common/tokenizer/bpe_train_job.h; this file is the
// command line.
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/tokenizer/bpe_train_job.h"

namespace suite {
namespace {

int body(int argc, char** argv) {
  Cli cli({.name = "bpe-train",
           .summary = "Train a GPT-2 style byte-level BPE tokenizer; writes vocab.json and merges.txt.",
           .example = "  bpe-train -i corpus.jsonl.zst --vocab-size 50257 --output-dir tok/\n"
                      "  bpe-encode --vocab-file tok/vocab.json --merge-file tok/merges.txt -i corpus.jsonl.zst\n"
                      "  bpe-train --input-format lines -i lines.txt --vocab-size 30000 --special-tokens --alphabet seen "
                      "--output-dir hf-like/",
           .details = "Pre-tokenization is GPT-2's; JSONL documents are counted whole (as bpe-encode sees them),\n"
                      "plain text (--input-format lines) line by line with each line's ending, as HF's\n"
                      "train(files) does. Merges follow HF's BpeTrainer: highest count first, ties to the\n"
                      "smaller (left id, right id). Special tokens are cut out of the training text and get\n"
                      "ids after the merges (GPT-2 layout: <|endoftext|> last) unless --specials-first.\n"
                      "Output files are written atomically (vocab.json in OpenAI's encoder.json layout,\n"
                      "merges.txt with a #version line)."});
  cli.options().add_options()                                                                              //
      ("output-dir", po::value<std::string>()->required(), "directory for vocab.json and merges.txt")       //
      ("vocab-size", ranged<size_t>(1, size_t{1} << 31)->default_value(50257), "final vocabulary size, specials included")  //
      ("min-frequency", ranged<uint64_t>(0)->default_value(0), "merge only pairs seen at least this often")  //
      ("special-tokens", po::value<std::vector<std::string>>()->multitoken()->zero_tokens(),
       "special tokens (default <|endoftext|>; give the option with no value for none)")  //
      ("specials-first", po::bool_switch(), "special tokens at ids 0..k-1 (HF layout) instead of last")  //
      ("alphabet", po::value<std::string>()->default_value("full"),
       "full: all 256 bytes are tokens (GPT-2); seen: only bytes that occur (a bare HF BpeTrainer)")  //
      ("input-format", po::value<std::string>()->default_value("jsonl"), "jsonl or lines (plain text)");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);
  const auto& vm = cli.vm();
  const std::string alphabet = vm["alphabet"].as<std::string>(), format = vm["input-format"].as<std::string>();
  if (alphabet != "full" && alphabet != "seen") throw UsageError("--alphabet must be full or seen, got '" + alphabet + "'");
  if (format != "jsonl" && format != "lines") throw UsageError("--input-format must be jsonl or lines, got '" + format + "'");
  bpe::BpeTrainConfig config;
  bpe::TrainerOptions& topt = config.trainer;
  topt.vocab_size = vm["vocab-size"].as<size_t>();
  topt.min_frequency = vm["min-frequency"].as<uint64_t>();
  if (vm.count("special-tokens")) topt.special_tokens = vm["special-tokens"].as<std::vector<std::string>>();
  std::erase(topt.special_tokens, std::string());
  topt.specials_first = vm["specials-first"].as<bool>();
  topt.full_byte_alphabet = alphabet == "full";
  config.output_dir = vm["output-dir"].as<std::string>();
  config.lines = format == "lines";
  bpe::run_bpe_train(options, config);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("bpe-train", argc, argv, suite::body); }
