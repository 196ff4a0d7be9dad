#include "common/dataset/preprocess.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <span>

#include "common/cli/error.h"
#include "common/dataset/indexed_dataset.h"
#include "common/dataset/indexed_dataset_writer.h"
#include "common/jsonl/doc_fields.h"
#include "common/io/output_lock.h"
#include "common/jsonl/document_error.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/tokenizer/bpe_model.h"
#include "common/tokenizer/encoder.h"

namespace suite::dataset {
namespace {

// Payload record of one document (all fields uint32, so every field stays 4-byte aligned inside
// the std::string buffer, whose data is aligned by operator new):
//   characters
//   per key: sentence_flag, sequence_count, token_count, lengths[sequence_count], tokens[token_count]
void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

uint32_t characters_of(std::string_view line) {
  uint32_t n = 1;  // the '\n' Megatron counts with the line
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

class PreprocessWorker final : public DocumentWorker {
 public:
  explicit PreprocessWorker(const PreprocessConfig& config) : config_(config) {
    if (config.model) encoder_.emplace(config.model);
    single_key_ = config.json_keys.size() == 1;
    for (const auto& k : config.json_keys) ids_keys_.push_back(k + "_ids");
  }

  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override {
    put_u32(out.payload, characters_of(doc.line()));
    for (size_t k = 0; k < config_.json_keys.size(); ++k) {
      const std::string& key = config_.json_keys[k];
      tokens_.clear();
      lengths_.clear();
      bool sentences = false;
      // doc.field(): the last of a repeated key, as Python's json (and preprocess_data.py) reads it.
      simdjson::dom::element value;
      auto found = [&](const std::string& name) {
        auto v = doc.field(name);
        if (v) value = *v;
        return v.has_value();
      };
      if (found(ids_keys_[k])) {
        sentences = add_ids_value(value, ids_keys_[k], where);
      } else if (single_key_ && found("ids")) {
        sentences = add_ids_value(value, "ids", where);
      } else if (found(key)) {
        if (value.is_string()) {
          // Not a document error to skip: every document would be skipped, or (before) written unsplit.
          if (config_.split_sentences)
            throw ToolError(location(where.source, where.line),
                            "field '" + key + "' is plain text, but --split-sentences needs sentence lists: this "
                            "tool does not split sentences (run sentence-split first)");
          add_text(std::string_view(value.get_string().value_unsafe()), key);
        } else if (value.is_array()) {
          sentences = add_array(value.get_array().value_unsafe(), key, where);
        } else {
          throw DocumentError("field '" + key + "' is not text or ids",
                              "field '" + key + "' is neither a string nor an array of token ids");
        }
      } else {
        throw DocumentError("missing field",
                            "no field '" + key + "' (nor '" + ids_keys_[k] + "'" + (single_key_ ? " or 'ids'" : "") +
                                ") in this document (choose the field with --json-keys)");
      }
      if (config_.append_eod && !tokens_.empty()) {
        tokens_.push_back(config_.eod_id);
        lengths_.back() += 1;
      }
      put_u32(out.payload, sentences ? 1 : 0);
      put_u32(out.payload, static_cast<uint32_t>(lengths_.size()));
      if (tokens_.size() > std::numeric_limits<uint32_t>::max())
        throw ToolError(location(where.source, where.line), "document has more than 2^32 tokens");
      put_u32(out.payload, static_cast<uint32_t>(tokens_.size()));
      out.payload.append(reinterpret_cast<const char*>(lengths_.data()), lengths_.size() * 4);
      out.payload.append(reinterpret_cast<const char*>(tokens_.data()), tokens_.size() * 4);
    }
    out.counts.add("kept");
  }

 private:
  // A value found under an ids field: array of ids, or array of arrays of ids (sentences).
  bool add_ids_value(simdjson::dom::element value, const std::string& field, const DocContext& where) {
    simdjson::dom::array arr;
    if (value.get_array().get(arr) != simdjson::SUCCESS)
      throw DocumentError("field '" + field + "' is not an array", "field '" + field + "' is not an array of token ids");
    return add_array(arr, field, where);
  }

  // [ids...] -> one sequence; [[ids...], ...] or ["sentence", ...] -> one sequence per non-empty one.
  bool add_array(simdjson::dom::array arr, const std::string& field, const DocContext& where) {
    if (arr.size() == 0) return false;  // an empty document
    simdjson::dom::element first = *arr.begin();
    if (first.is_array() || first.is_string()) {
      for (simdjson::dom::element s : arr) {
        const size_t before = tokens_.size();
        simdjson::dom::array ids;
        if (s.get_array().get(ids) == simdjson::SUCCESS) {
          append_ids(ids, field, where);
        } else if (s.is_string()) {
          if (!encoder_) need_vocabulary(field);
          encoder_->encode(std::string_view(s.get_string().value_unsafe()), tokens_);
        } else {
          throw DocumentError("field '" + field + "' mixes sentences and ids",
                              "field '" + field + "': a sentence list holds something that is neither a string nor an "
                              "array of token ids");
        }
        if (tokens_.size() > before) push_length(tokens_.size() - before, where);
      }
      return true;
    }
    append_ids(arr, field, where);
    if (!tokens_.empty()) push_length(tokens_.size(), where);
    return false;
  }

  void append_ids(simdjson::dom::array ids, const std::string& field, const DocContext& where) {
    const size_t before = tokens_.size();
    uint64_t largest = read_ids(ids, field, tokens_);
    if (tokens_.size() > before && largest > config_.max_token_id)
      throw ToolError(location(where.source, where.line),
                      "field '" + field + "': token id " + std::to_string(largest) + " does not fit: " +
                          config_.max_token_reason);
  }

  void add_text(std::string_view text, const std::string& key) {
    if (!encoder_) need_vocabulary(key);
    encoder_->encode(text, tokens_);
    if (!tokens_.empty()) lengths_.push_back(static_cast<int32_t>(tokens_.size()));
  }

  void push_length(size_t n, const DocContext& where) {
    if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw ToolError(location(where.source, where.line), "a sequence of " + std::to_string(n) +
                                                              " tokens does not fit the .idx int32 length field");
    lengths_.push_back(static_cast<int32_t>(n));
  }

  [[noreturn]] void need_vocabulary(const std::string& field) const {
    throw ToolError("field '" + field +
                    "' holds text: give --vocab-file and --merge-file to tokenize it here, or pipe it through "
                    "bpe-encode first");
  }

  const PreprocessConfig& config_;
  std::optional<bpe::Encoder> encoder_;
  bool single_key_ = true;
  std::vector<std::string> ids_keys_;
  std::vector<uint32_t> tokens_;
  std::vector<int32_t> lengths_;
};

uint32_t get_u32(const char*& p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  p += 4;
  return v;
}

}  // namespace

std::string preprocess_output_prefix(std::string_view output_prefix, std::string_view key, bool sentence_level) {
  return std::string(output_prefix) + "_" + std::string(key) + (sentence_level ? "_sentence" : "_document");
}

PreprocessResult run_preprocess(const CommonOptions& options, const PreprocessConfig& config) {
  if (config.json_keys.empty()) throw UsageError("--json-keys needs at least one key");
  const size_t nkeys = config.json_keys.size();
  std::vector<std::unique_ptr<IndexedDatasetWriter>> writers(nkeys);
  // The level is fixed by --split-sentences or, without it, by the first document: sentence lists
  // give a sentence-level dataset.
  auto open_writers = [&](bool sentence_level) {
    for (size_t k = 0; k < nkeys; ++k)
      writers[k] = std::make_unique<IndexedDatasetWriter>(
          preprocess_output_prefix(config.output_prefix, config.json_keys[k], sentence_level), config.dtype);
  };

  // The writers open with the first document (its shape decides the level); the outputs of both
  // levels are locked now, so that a second run on the same prefix fails before any work.
  std::vector<std::unique_ptr<OutputLock>> locks;
  for (const auto& key : config.json_keys)
    for (bool sentence_level : {false, true}) {
      const std::string prefix = preprocess_output_prefix(config.output_prefix, key, sentence_level);
      locks.push_back(std::make_unique<OutputLock>(prefix + ".lock", prefix + ".{bin,idx}"));
    }

  for (const auto& in : options.inputs)
    if (!config.quiet) std::cout << "Opening " << in << "\n";
  if (options.inputs.empty() && !config.quiet) std::cout << "Opening -\n";
  std::cout.flush();

  const auto start = std::chrono::steady_clock::now();
  uint64_t documents = 0, characters = 0;
  CommonOptions run_options = options;
  run_options.quiet = true;  // our own Megatron-shaped progress lines replace the runner's
  JsonlRunOptions run;
  run.print_summary = true;  // still reports skipped documents (--on-error=skip), even when quiet

  run_jsonl(
      run_options, [&config] { return std::make_unique<PreprocessWorker>(config); },
      [&](ChunkOutput& chunk) {
        const char* p = chunk.payload.data();
        const char* end = p + chunk.payload.size();
        while (p < end) {
          characters += get_u32(p);
          for (size_t k = 0; k < nkeys; ++k) {
            const uint32_t sentence = get_u32(p);
            const uint32_t nseq = get_u32(p);
            const uint32_t ntok = get_u32(p);
            if (!writers[k]) open_writers(config.split_sentences || sentence);
            std::span<const int32_t> lens(reinterpret_cast<const int32_t*>(p), nseq);
            p += 4ull * nseq;
            std::span<const uint32_t> toks(reinterpret_cast<const uint32_t*>(p), ntok);
            p += 4ull * ntok;
            writers[k]->add_document(toks, lens);
          }
          ++documents;
          if (config.log_interval && documents % config.log_interval == 0 && !config.quiet) {
            double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::cerr << megatron_progress_line(documents, characters, elapsed) << "\n";
          }
        }
      },
      run);
  if (!writers[0]) open_writers(config.split_sentences);
  PreprocessResult result;
  result.documents = documents;
  for (auto& w : writers) {
    result.prefixes.push_back(w->prefix());
    w->finalize();
  }
  return result;
}

std::string python_float_str(double value) {
  if (value != value) return "nan";
  if (value == std::numeric_limits<double>::infinity()) return "inf";
  if (value == -std::numeric_limits<double>::infinity()) return "-inf";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits and decimal exponent, then Python's float_repr_style rules.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  size_t e = s.find('e');
  int exp10 = std::stoi(s.substr(e + 1));
  std::string digits = s.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out;
  if (exp10 < -4 || exp10 >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += eb;
  } else if (exp10 < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  } else {
    const size_t int_digits = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= int_digits) {
      out = digits + std::string(int_digits - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
    }
  }
  return negative ? "-" + out : out;
}

std::string megatron_progress_line(uint64_t documents, uint64_t characters, double elapsed_seconds) {
  if (elapsed_seconds <= 0) elapsed_seconds = 1e-9;
  const double rate = static_cast<double>(documents) / elapsed_seconds;
  const double mbs = static_cast<double>(characters) / elapsed_seconds / 1024 / 1024;
  return "Processed " + std::to_string(documents) + " documents (" + python_float_str(rate) + " docs/s, " +
         python_float_str(mbs) + " MB/s).";
}

DatasetStats dataset_stats(const IndexedDataset& data) {
  DatasetStats s;
  s.sequences = data.sequence_count();
  s.documents = data.document_count();
  for (uint64_t d = 0; d < s.documents; ++d)
    if (data.document_index(d + 1) == data.document_index(d)) ++s.empty_documents;
  auto lengths = data.sequence_lengths();
  if (!lengths.empty()) {
    s.min_length = *std::min_element(lengths.begin(), lengths.end());
    s.max_length = *std::max_element(lengths.begin(), lengths.end());
  }
  for (int32_t n : lengths) s.tokens += static_cast<uint64_t>(n);
  s.mean_length = s.sequences ? static_cast<double>(s.tokens) / static_cast<double>(s.sequences) : 0.0;
  auto scan = [&](auto tag) {
    using T = decltype(tag);
    auto bytes = data.data_bytes();
    std::span<const T> all(reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T));
    if (all.empty()) return;
    auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    s.min_token = static_cast<int64_t>(*lo);
    s.max_token = static_cast<int64_t>(*hi);
  };
  switch (data.dtype()) {
    case DType::UInt8: scan(uint8_t{}); break;
    case DType::Int8: scan(int8_t{}); break;
    case DType::Int16: scan(int16_t{}); break;
    case DType::UInt16: scan(uint16_t{}); break;
    case DType::Int32: scan(int32_t{}); break;
    case DType::Int64: scan(int64_t{}); break;
    default: break;  // float datasets: no token statistics
  }
  return s;
}

std::vector<int64_t> document_tokens(const IndexedDataset& data, uint64_t d) {
  if (d >= data.document_count())
    throw ToolError(data.idx_file(), "document " + std::to_string(d) + " out of range (the dataset has " +
                                         std::to_string(data.document_count()) + " documents)");
  std::vector<int64_t> out;
  for (int64_t i = data.document_index(d); i < data.document_index(d + 1); ++i)
    data.append_tokens(static_cast<uint64_t>(i), out);
  return out;
}

}  // namespace suite::dataset
