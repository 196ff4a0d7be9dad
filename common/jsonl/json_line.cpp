#include "common/jsonl/json_line.h"

#include "common/jsonl/document_error.h"

namespace suite {

JsonLineError JsonLine::parse(std::string_view line) {
  line_ = line;
  fields_ready_ = false;
  simdjson::dom::element doc;
  error_ = parser_.parse(line.data(), line.size(), false).get(doc);
  if (error_ == simdjson::UTF8_ERROR) return JsonLineError::kInvalidUtf8;
  if (error_) return JsonLineError::kInvalidJson;
  if (doc.get_object().get(root_)) {
    error_ = simdjson::INCORRECT_TYPE;
    return JsonLineError::kNotAnObject;
  }
  return JsonLineError::kNone;
}

std::string JsonLine::error_message() const {
  if (error_ == simdjson::UTF8_ERROR) return "invalid UTF-8";
  if (error_ == simdjson::INCORRECT_TYPE) return "not a JSON object";
  return std::string("invalid JSON (") + simdjson::error_message(error_) + ")";
}

std::optional<simdjson::dom::element> JsonLine::field(std::string_view key) const {
  std::optional<simdjson::dom::element> last;
  for (auto kv : root_)
    if (kv.key == key) last = kv.value;
  return last;
}

std::optional<std::string_view> JsonLine::string_field(std::string_view key) const {
  std::optional<simdjson::dom::element> value = field(key);
  if (!value) return std::nullopt;
  std::string_view s;
  if (value->get_string().get(s))
    throw DocumentError("non-string field", "field \"" + std::string(key) + "\" is not a string");
  return s;
}

namespace {

// The text is already valid JSON, so scanning only needs to track strings and nesting.
size_t skip_ws(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
  return i;
}

size_t skip_string(std::string_view s, size_t i) {  // s[i] == '"'; returns index after the closing quote
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

size_t skip_value(std::string_view s, size_t i) {
  int depth = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      i = skip_string(s, i) - 1;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return i;
      --depth;
    } else if (c == ',' && depth == 0) {
      return i;
    }
  }
  return s.size();
}

}  // namespace

const std::vector<RawField>& JsonLine::raw_fields() {
  if (fields_ready_) return fields_;
  fields_.clear();
  std::string_view s = line_;
  size_t i = skip_ws(s, 0) + 1;  // past '{'
  auto it = root_.begin();
  for (;;) {
    i = skip_ws(s, i);
    if (i >= s.size() || s[i] == '}') break;
    size_t key_end = skip_string(s, i);
    RawField f;
    f.raw_key = s.substr(i, key_end - i);
    i = skip_ws(s, key_end) + 1;  // past ':'
    i = skip_ws(s, i);
    size_t value_end = skip_value(s, i);
    size_t trimmed = value_end;
    while (trimmed > i && (s[trimmed - 1] == ' ' || s[trimmed - 1] == '\t' || s[trimmed - 1] == '\r')) --trimmed;
    f.raw_value = s.substr(i, trimmed - i);
    f.key = std::string(it.key());  // the DOM walks the same fields in the same order
    ++it;
    fields_.push_back(std::move(f));
    i = value_end;
    if (i < s.size() && s[i] == ',') ++i;
  }
  fields_ready_ = true;
  return fields_;
}

}  // namespace suite
