#include "common/dataset/jsonl_to_mmap_job.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "common/cli/error.h"
#include "common/dataset/dtype.h"
#include "common/dataset/indexed_dataset.h"
#include "common/dataset/merge.h"
#include "common/dataset/preprocess.h"
#include "common/tokenizer/bpe_model.h"

namespace suite::dataset {
namespace {

void print_info(const JsonlToMmapConfig& config) {
  const std::string& prefix = config.info_prefix;
  IndexedDataset data(prefix);
  DatasetStats s = dataset_stats(data);
  std::printf("dataset    %s\n", prefix.c_str());
  std::printf("dtype      %s\n", std::string(dtype_name(data.dtype())).c_str());
  std::printf("sequences  %llu\n", (unsigned long long)s.sequences);
  std::printf("documents  %llu (%llu empty)\n", (unsigned long long)s.documents, (unsigned long long)s.empty_documents);
  std::printf("tokens     %llu\n", (unsigned long long)s.tokens);
  std::printf("length     min %lld, max %lld, mean %.2f tokens per sequence\n", (long long)s.min_length,
              (long long)s.max_length, s.mean_length);
  std::printf("token ids  min %lld, max %lld\n", (long long)s.min_token, (long long)s.max_token);
  if (config.show_doc) {
    uint64_t d = *config.show_doc;
    auto ids = document_tokens(data, d);
    std::printf("document %llu: %zu tokens, sequences [%lld, %lld)\n", (unsigned long long)d, ids.size(),
                (long long)data.document_index(d), (long long)data.document_index(d + 1));
    std::string line = "ids:";
    for (int64_t t : ids) line += " " + std::to_string(t);
    std::printf("%s\n", line.c_str());
    if (!config.vocab_file.empty()) {
      auto model = bpe::BpeModel::load(config.vocab_file, config.merge_file);
      std::vector<bpe::TokenId> tok;
      for (int64_t t : ids) {
        if (t < 0 || static_cast<uint64_t>(t) >= model->vocab_size())
          throw ToolError(data.bin_file(), "document " + std::to_string(d) + ": token " + std::to_string(t) +
                                               " is not in the vocabulary (" + std::to_string(model->vocab_size()) +
                                               " tokens)");
        tok.push_back(static_cast<bpe::TokenId>(t));
      }
      std::printf("text:\n%s\n", model->decode(tok).c_str());
    }
  }
}

void merge(const CommonOptions& options, const JsonlToMmapConfig& config) {
  const std::vector<std::string>& words = config.merge_words;
  if (words.size() < 2) throw UsageError("--merge needs OUT and at least one input (prefix or directory)");
  const std::string out = words[0];
  std::vector<std::string> inputs(words.begin() + 1, words.end());
  if (inputs.size() == 1 && std::filesystem::is_directory(inputs[0])) inputs = dataset_prefixes_in_directory(inputs[0], out);
  if (inputs.empty()) throw ToolError(words[1], "no datasets to merge");
  merge_datasets(inputs, out);
  if (!options.quiet) std::cerr << "jsonl-to-mmap: merged " << inputs.size() << " datasets into " << out << "\n";
}

// The conversion's settings: the model, the EOD id, the dtype and the largest id accepted (the
// vocabulary's last id when known, else the dtype's maximum), with the reason for error messages.
PreprocessConfig preprocess_config(const CommonOptions& options, const JsonlToMmapConfig& c) {
  PreprocessConfig config;
  config.json_keys = options.json_keys;
  config.output_prefix = c.output_prefix;
  config.append_eod = c.append_eod;
  config.split_sentences = c.split_sentences;
  config.log_interval = c.log_interval;
  config.quiet = options.quiet;
  std::optional<uint64_t> vocab_size;
  std::string vocab_source;
  if (!c.vocab_file.empty()) {
    config.model = bpe::BpeModel::load(c.vocab_file, c.merge_file);
    vocab_size = config.model->vocab_size();
    vocab_source = "the vocabulary of " + c.vocab_file + " has " + std::to_string(*vocab_size) + " tokens";
    if (config.append_eod) {
      auto eod = config.model->eot_token();
      if (!eod) throw ToolError(c.vocab_file, "--append-eod: the vocabulary has no <|endoftext|>");
      config.eod_id = *eod;
    }
  }
  if (c.vocab_size) {
    if (vocab_size && *vocab_size != *c.vocab_size)
      throw UsageError("--vocab-size " + std::to_string(*c.vocab_size) + " disagrees with " + vocab_source);
    vocab_size = *c.vocab_size;
    if (*vocab_size == 0) throw UsageError("--vocab-size must be positive");
    vocab_source = "--vocab-size is " + std::to_string(*vocab_size);
  }
  if (c.eod_id) config.eod_id = *c.eod_id;
  if (c.dtype) {
    auto t = dtype_from_name(*c.dtype);
    if (!t || !is_integer(*t) || !idx_code(*t))
      throw UsageError("--dtype must be one of uint8 int8 int16 uint16 int32 int64, got '" + *c.dtype + "'");
    config.dtype = *t;
  } else if (vocab_size) {
    config.dtype = token_dtype_for_vocab(*vocab_size);
  } else {
    config.dtype = DType::UInt16;
  }
  config.max_token_id = max_token_id(config.dtype);
  config.max_token_reason = "the dataset dtype is " + std::string(dtype_name(config.dtype)) +
                            (c.dtype ? " (--dtype)" : vocab_size ? "" : " (no vocabulary given)") +
                            "; give --vocab-size N (int32 from 65500) or --dtype int32";
  if (vocab_size && *vocab_size - 1 < config.max_token_id) {
    config.max_token_id = *vocab_size - 1;
    config.max_token_reason = vocab_source;
  }
  if (config.append_eod && config.eod_id > config.max_token_id)
    throw UsageError("--eod-id " + std::to_string(config.eod_id) + " does not fit: " + config.max_token_reason);
  return config;
}

}  // namespace

void run_jsonl_to_mmap(const CommonOptions& options, const JsonlToMmapConfig& c) {
  if (c.mode == JsonlToMmapConfig::Mode::kInfo) return print_info(c);
  if (c.mode == JsonlToMmapConfig::Mode::kMerge) return merge(options, c);
  PreprocessConfig config = preprocess_config(options, c);
  auto result = run_preprocess(options, config);
  if (!options.quiet)
    for (const auto& p : result.prefixes)
      std::cerr << "jsonl-to-mmap: wrote " << p << ".bin/.idx (" << result.documents << " documents, "
                << dtype_name(config.dtype) << ")\n";
}

}  // namespace suite::dataset
