#include "common/tokenizer/jsonl_codec.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <span>

#include "common/jsonl/doc_fields.h"
#include "common/jsonl/document_error.h"
#include "common/jsonl/json_writer.h"
#include "common/unicode/utf8.h"

namespace suite::bpe {
namespace {

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected) {
  throw DocumentError("non-string field", "field \"" + field + "\" is not " + expected);
}

}  // namespace

std::string id_field_name(const std::vector<std::string>& keys, size_t i) {
  return keys.size() == 1 ? std::string("ids") : keys[i] + "_ids";
}

JsonlCodec::JsonlCodec(std::shared_ptr<const BpeModel> model, CodecOptions options)
    : options_(std::move(options)), encoder_(std::move(model), options_.encode) {
  if (auto eot = encoder_.model().eot_token()) eot_ = *eot;
  for (size_t i = 0; i < options_.keys.size(); ++i) {
    in_names_.push_back(options_.keys[i]);
    out_names_.push_back(id_field_name(options_.keys, i));
  }
  if (options_.decode) std::swap(in_names_, out_names_);
  // Decimal text of every id, for fast output.
  auto table = std::make_shared<DigitTable>();
  const size_t vocab = encoder_.model().vocab_size();
  table->text.assign(vocab * kDigitsSlot, '\0');
  for (size_t id = 0; id < vocab; ++id) {
    char* slot = &table->text[id * kDigitsSlot];
    auto r = std::to_chars(slot, slot + kDigitsSlot - 2, id);
    if (r.ec != std::errc()) throw std::length_error("vocabulary too large");
    *r.ptr++ = ',';
    slot[kDigitsSlot - 1] = static_cast<char>(r.ptr - slot);
    table->longest = std::max<size_t>(table->longest, r.ptr - slot);
  }
  digits_ = std::move(table);
}

void JsonlCodec::process(JsonLine& doc, const DocContext&, ChunkOutput& out) {
  // The untouched fields in input order, then the new fields, rendered straight into the output
  // (the runner drops a partly written document when a DocumentError is thrown).
  JsonObjectWriter obj(out.text);
  auto dropped = [&](std::string_view key) {
    return contains(out_names_, key) || (!options_.keep_source && contains(in_names_, key));
  };
  // Locating raw fields scans the whole line: skip it when no field is kept (e.g. {"text": ...}).
  bool any_kept = false;
  for (auto field : doc.root()) any_kept = any_kept || !dropped(field.key);
  if (any_kept)
    for (const RawField& f : doc.raw_fields())
      if (!dropped(f.key)) obj.raw_field(f.raw_key, f.raw_value);
  if (options_.decode) decode_document(doc, obj, out);
  else encode_document(doc, obj, out);
  obj.end_line();
  out.counts.add("kept");
}

void JsonlCodec::append_ids(std::string& out, const TokenId* ids, size_t n) const {
  // Every id is below the vocabulary size: copy its digits from the table.
  size_t at = out.size();
  out.resize(at + 2 + n * digits_->longest + kDigitsSlot);
  char* p = out.data() + at;
  *p++ = '[';
  for (size_t i = 0; i < n; ++i) {
    const char* d = &digits_->text[size_t{ids[i]} * kDigitsSlot];
    std::memcpy(p, d, kDigitsSlot);  // the digits and ','; the rest is overwritten or cut
    p += static_cast<unsigned char>(d[kDigitsSlot - 1]);
  }
  if (n) --p;  // the last ','
  *p++ = ']';
  out.resize(static_cast<size_t>(p - out.data()));
}

void JsonlCodec::encode_document(JsonLine& doc, JsonObjectWriter& obj, ChunkOutput& out) {
  uint64_t tokens = 0;
  for (size_t k = 0; k < in_names_.size(); ++k) {
    ids_.clear();
    ends_.clear();
    TextOrSentences field = read_text_or_sentences(doc, in_names_[k]);
    const bool sentences = field.sentences;
    field.for_each([&](std::string_view text) {
      encoder_.encode(text, ids_);
      ends_.push_back(ids_.size());
    });
    if (options_.append_eod && !ids_.empty()) {
      // To the last non-empty sentence (every later one is empty, so it ends at ids_.size()).
      size_t last = ends_.size() - 1;
      while (last > 0 && ends_[last - 1] == ends_[last]) --last;
      ids_.push_back(eot_);
      for (size_t j = last; j < ends_.size(); ++j) ++ends_[j];
    }
    tokens += ids_.size();
    std::string& v = obj.begin_field(out_names_[k]);
    if (!sentences) {
      append_ids(v, ids_.data(), ids_.size());
      continue;
    }
    v += '[';
    size_t begin = 0;
    for (size_t j = 0; j < ends_.size(); ++j) {
      if (j) v += ',';
      append_ids(v, ids_.data() + begin, ends_[j] - begin);
      begin = ends_[j];
    }
    v += ']';
  }
  out.counts.add("tokens", tokens);
}

bool JsonlCodec::decode_ids(const simdjson::dom::array& ids, const std::string& field, std::string& text) {
  decode_ids_.clear();
  const size_t vocab = encoder_.model().vocab_size();
  uint64_t largest = read_ids(ids, field, decode_ids_);
  if (!decode_ids_.empty() && largest >= vocab)
    throw DocumentError("id out of range", "field \"" + field + "\": token id " + std::to_string(largest) +
                                               " is not below the vocabulary size " + std::to_string(vocab));
  decoded_.clear();
  encoder_.model().decode_append(decode_ids_, decoded_);
  if (unicode::utf8_is_valid(decoded_)) {
    append_json_string(text, decoded_);
    return false;
  }
  if (!options_.repair_decoded)
    throw DocumentError("invalid UTF-8 after decoding",
                        "field \"" + field + "\" decodes to invalid UTF-8 (--on-error=replace repairs it)");
  append_json_string(text, unicode::utf8_repair(decoded_));
  return true;
}

void JsonlCodec::decode_document(JsonLine& doc, JsonObjectWriter& obj, ChunkOutput& out) {
  bool repaired = false;
  for (size_t k = 0; k < in_names_.size(); ++k) {
    const std::string& key = in_names_[k];
    simdjson::dom::element el = require_field(doc, key);
    simdjson::dom::array array;
    if (el.get_array().get(array)) wrong_type(key, "an array of token ids");
    std::string& v = obj.begin_field(out_names_[k]);
    simdjson::dom::array first;
    bool sentences = array.size() > 0 && !array.at(0).get_array().get(first);
    if (!sentences) {
      repaired |= decode_ids(array, key, v);
      continue;
    }
    v += '[';
    bool comma = false;
    for (simdjson::dom::element item : array) {
      simdjson::dom::array sentence;
      if (item.get_array().get(sentence)) wrong_type(key, "an array of id arrays");
      if (comma) v += ',';
      comma = true;
      repaired |= decode_ids(sentence, key, v);
    }
    v += ']';
  }
  if (repaired) out.counts.add("replaced: invalid UTF-8 after decoding");
}

}  // namespace suite::bpe
