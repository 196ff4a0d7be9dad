// bpe-encode: JSONL text -> GPT-2 byte-level BPE token ids (and back with --decode).
// The work is in common/tokenizer/bpe_encode_job.h (per document: jsonl_codec.h); this file is the
// command line.
#include <string>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/tokenizer/bpe_encode_job.h"

namespace suite {
namespace {

constexpr const char* kDetails =
    "Fields:\n"
    "  Each --json-keys field must be a string or an array of strings (e.g. from a sentence\n"
    "  splitter). With one key K the ids go to the field \"ids\"; with several keys to \"K_ids\"\n"
    "  per key, in --json-keys order. A string gives [id,...]; an array of strings gives one\n"
    "  id array per string. All other fields are copied byte for byte in input order; the\n"
    "  text fields are dropped unless --keep-text, and an existing field with an output name\n"
    "  is replaced. The id fields come last.\n"
    "  --append-eod appends the model's <|endoftext|> id (50256 for GPT-2) to each document:\n"
    "  for an array, to its last non-empty sentence; a document that encodes to no tokens at\n"
    "  all gets none (as Megatron's preprocess_data.py does).\n"
    "  --decode reverses the mapping: \"ids\" (or \"K_ids\") in -> \"text\" (or K) out, an array\n"
    "  of id arrays giving an array of strings; ids are decoded as they are (an end-of-text id\n"
    "  becomes the text <|endoftext|>). Decoded bytes that are not valid UTF-8 are a document\n"
    "  error (with --on-error=replace they are repaired with U+FFFD).\n"
    "Errors:\n"
    "  Invalid UTF-8 fails naming file:line (--on-error=replace substitutes U+FFFD, skip drops\n"
    "  the line); a missing or non-string text field is a document error (skip counts it).";

int body(int argc, char** argv) {
  Cli cli({.name = "bpe-encode",
           .summary = "Encode the text of JSONL documents to GPT-2 BPE token ids (or decode ids back to text).",
           .example =
               "  echo '{\"id\":7,\"text\":\"hello world\"}' | \\\n"
               "    bpe-encode --vocab-file data/gpt2/vocab.json --merge-file data/gpt2/merges.txt --append-eod\n"
               "  # -> {\"id\":7,\"ids\":[31373,995,50256]}\n"
               "  bpe-encode --vocab-file vocab.json --merge-file merges.txt --decode -i ids.jsonl -o text.jsonl",
           .details = kDetails});
  cli.options().add_options()                                                                   //
      ("vocab-file", po::value<std::string>()->required(), "vocab.json (GPT-2 / HF format)")     //
      ("merge-file", po::value<std::string>()->required(), "merges.txt (GPT-2 / HF format)")     //
      ("append-eod", po::bool_switch(), "append the end-of-text id to each document")           //
      ("allow-special", po::bool_switch(),
       "encode a literal <|endoftext|> in the text as its id (default: ordinary text)")  //
      ("keep-text", po::bool_switch(), "keep the text fields (with --decode: the id fields)")  //
      ("decode", po::bool_switch(), "decode id fields back to text");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);
  const auto& vm = cli.vm();
  bpe::BpeEncodeConfig config;
  bpe::CodecOptions& codec = config.codec;
  codec.append_eod = vm["append-eod"].as<bool>();
  codec.keep_source = vm["keep-text"].as<bool>();
  codec.decode = vm["decode"].as<bool>();
  codec.repair_decoded = options.on_error == OnError::kReplace;
  codec.encode.allow_special = vm["allow-special"].as<bool>();
  if (codec.decode && (codec.append_eod || codec.encode.allow_special))
    throw UsageError("--decode does not take --append-eod or --allow-special");
  config.vocab_file = vm["vocab-file"].as<std::string>();
  config.merge_file = vm["merge-file"].as<std::string>();
  bpe::run_bpe_encode(options, config);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("bpe-encode", argc, argv, suite::body); }
