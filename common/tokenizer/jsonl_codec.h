// The document worker of bpe-encode: one JSONL document -> the same document with token-id
// fields (or, decoding, id fields -> text fields). One JsonlCodec per worker thread; copying one
// is cheap (the copy's Encoder starts with an empty cache).
//
// Field layout (encode; decode is the mirror image):
//   keys {K}        : K (string | array of strings) -> "ids" ([id,...] | [[id,...],...])
//   keys {K1,K2,...}: each Ki -> "Ki_ids"
// Other fields are copied byte for byte in input order; the source fields are dropped unless
// keep_source; an input field that has an output name is replaced; output fields come last.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/jsonl/json_writer.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/tokenizer/encoder.h"

namespace suite::bpe {

struct CodecOptions {
  std::vector<std::string> keys{"text"};
  bool append_eod = false;       // the model's <|endoftext|> id after each document
  bool keep_source = false;      // keep the fields that were encoded (decoded)
  bool decode = false;           // ids -> text instead of text -> ids
  bool repair_decoded = false;   // decode: invalid UTF-8 -> U+FFFD instead of a DocumentError
  EncodeOptions encode;
};

// Output field name for key index i: "ids"/"text" style names as described above.
std::string id_field_name(const std::vector<std::string>& keys, size_t i);

class JsonlCodec final : public DocumentWorker {
 public:
  JsonlCodec(std::shared_ptr<const BpeModel> model, CodecOptions options);
  JsonlCodec(const JsonlCodec& other) = default;

  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override;

 private:
  // Per id: its digits, ',', padding, and the length of digits + ',' in the last byte.
  static constexpr size_t kDigitsSlot = 16;
  struct DigitTable {
    std::string text;    // kDigitsSlot bytes per id
    size_t longest = 0;  // longest digits + ','
  };
  void encode_document(JsonLine& doc, JsonObjectWriter& obj, ChunkOutput& out);
  void decode_document(JsonLine& doc, JsonObjectWriter& obj, ChunkOutput& out);
  void append_ids(std::string& out, const TokenId* ids, size_t n) const;
  // Appends the decoded ids as a JSON string; true when invalid UTF-8 had to be repaired.
  bool decode_ids(const simdjson::dom::array& ids, const std::string& field, std::string& text);

  CodecOptions options_;
  Encoder encoder_;
  TokenId eot_ = kNoToken;
  std::vector<std::string> in_names_, out_names_;  // per key
  // Scratch, reused between documents.
  std::vector<TokenId> ids_;
  std::vector<size_t> ends_;       // end offset in ids_ of each sentence
  std::shared_ptr<const DigitTable> digits_;  // shared by the copies
  std::vector<TokenId> decode_ids_;
  std::string decoded_;
};

}  // namespace suite::bpe
