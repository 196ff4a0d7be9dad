// The JSONL -> Megatron .bin/.idx path of Megatron's tools/preprocess_data.py (golden version
// cd760a9e0e, 2023-10-25), as used by jsonl-to-mmap:
//
//   per JSON line, per --json-keys key (in order):
//     token ids = the key's pre-tokenized ids (bpe-encode output) or the GPT-2 tokenization of its
//                 text; a list of sentences (Megatron's "_ss" file, or [[ids], ...]) gives one
//                 sequence per non-empty sentence
//     --append-eod: the EOD id ends every non-empty document (counted in its last sequence)
//     builder.add_document(ids, lens)   (an empty document is a zero-sequence document, §2.5)
//
// Workers turn documents into a compact binary record (ChunkOutput.payload); the consumer, which
// sees chunks in input order, appends the records to one IndexedDatasetWriter per key. Progress
// lines have Megatron's shape: "Processed N documents (R docs/s, M MB/s)." every --log-interval
// documents, where MB counts characters (code points, '\n' included) as Megatron does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli/options.h"
#include "common/dataset/dtype.h"

namespace suite::bpe {
class BpeModel;
}

namespace suite::dataset {

class IndexedDataset;

// Where a key's ids are looked up in a document, in this order:
//   "{key}_ids"                      (ids array or array of sentence arrays)
//   "ids"                            (only with a single key: what bpe-encode writes)
//   "{key}" holding an array         (ids, sentence id arrays, or sentence strings)
//   "{key}" holding a string         (text; tokenized in-process, needs the vocabulary)
struct PreprocessConfig {
  std::vector<std::string> json_keys{"text"};
  std::string output_prefix;
  bool append_eod = false;
  bool split_sentences = false;  // output level "sentence" (input must hold sentence lists)
  uint64_t log_interval = 1000;  // documents between progress lines; 0: none
  bool quiet = false;
  DType dtype = DType::UInt16;
  // Largest id accepted (vocabulary size - 1 when known, else the dtype's maximum).
  uint64_t max_token_id = 65535;
  std::string max_token_reason;  // how max_token_id was chosen, for the error message
  uint32_t eod_id = 50256;
  std::shared_ptr<const bpe::BpeModel> model;  // null: ids input only
};

struct PreprocessResult {
  uint64_t documents = 0;
  std::vector<std::string> prefixes;  // one dataset per key, in --json-keys order
};

// {output_prefix}_{key}_{document|sentence}
std::string preprocess_output_prefix(std::string_view output_prefix, std::string_view key, bool sentence_level);

// Runs the whole conversion over options.inputs with options.threads workers.
PreprocessResult run_preprocess(const CommonOptions& options, const PreprocessConfig& config);

// Python's str(float): shortest round-trip digits, exponent form below 1e-4 or from 1e16.
std::string python_float_str(double value);

// "Processed {count} documents ({rate} docs/s, {mbs} MB/s)." exactly as preprocess_data.py.
std::string megatron_progress_line(uint64_t documents, uint64_t characters, double elapsed_seconds);

// Figures of a dataset for `jsonl-to-mmap --info`.
struct DatasetStats {
  uint64_t sequences = 0;
  uint64_t documents = 0;
  uint64_t empty_documents = 0;  // zero-sequence documents
  uint64_t tokens = 0;
  int64_t min_length = 0;        // over sequences (0 when there are none)
  int64_t max_length = 0;
  double mean_length = 0.0;
  int64_t min_token = 0;         // over all tokens (0 when there are none)
  int64_t max_token = 0;
};
DatasetStats dataset_stats(const IndexedDataset& data);

// Token ids of document d (all its sequences, concatenated).
std::vector<int64_t> document_tokens(const IndexedDataset& data, uint64_t d);

}  // namespace suite::dataset
