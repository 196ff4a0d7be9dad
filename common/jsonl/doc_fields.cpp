#include "common/jsonl/doc_fields.h"

#include <algorithm>

#include "common/jsonl/document_error.h"

namespace suite {

simdjson::dom::element require_field(JsonLine& doc, const std::string& key) {
  // The last of a repeated key, as Python's json (and so Megatron and datatrove) reads it.
  std::optional<simdjson::dom::element> value = doc.field(key);
  if (!value) throw DocumentError("missing field", "no \"" + key + "\" field");
  return *value;
}

std::string_view read_text(JsonLine& doc, const std::string& key) {
  std::optional<std::string_view> text = doc.string_field(key);
  if (!text) throw DocumentError("missing field", "no \"" + key + "\" field");
  return *text;
}

TextOrSentences text_or_sentences(simdjson::dom::element value, const std::string& key) {
  TextOrSentences field;
  if (!value.get_string().get(field.text)) return field;
  bool ok = !value.get_array().get(field.array);
  if (ok)
    for (simdjson::dom::element item : field.array) ok = ok && item.is_string();
  if (!ok) throw DocumentError("non-string field", "field \"" + key + "\" is not a string or an array of strings");
  field.sentences = true;
  return field;
}

TextOrSentences read_text_or_sentences(JsonLine& doc, const std::string& key) {
  return text_or_sentences(require_field(doc, key), key);
}

uint64_t read_ids(simdjson::dom::array ids, const std::string& field, std::vector<uint32_t>& out) {
  uint64_t largest = 0;
  for (simdjson::dom::element e : ids) {
    uint64_t v;
    if (e.get_uint64().get(v) != simdjson::SUCCESS)
      throw DocumentError("non-id field", "field \"" + field + "\" holds " + std::string(simdjson::minify(e)) +
                                              ", not a non-negative integer token id");
    largest = std::max(largest, v);
    out.push_back(static_cast<uint32_t>(v));
  }
  return largest;
}

}  // namespace suite
