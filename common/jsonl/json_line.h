// One JSONL line, parsed and validated with simdjson's DOM parser (strict JSON, valid UTF-8),
// with access to string fields by key and to every top-level field as raw text, so that a tool
// rewriting a document passes the fields it does not touch through byte for byte.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace suite {

struct RawField {
  std::string_view raw_key;    // with its quotes, exactly as in the input
  std::string_view raw_value;  // exactly as in the input
  std::string key;             // unescaped
};

enum class JsonLineError { kNone, kInvalidJson, kInvalidUtf8, kNotAnObject };

class JsonLine {
 public:
  // Parses `line` (without its newline). The kChunkPadding bytes after it must be readable
  // (LineChunk guarantees this); `line` must stay alive while fields are used.
  JsonLineError parse(std::string_view line);
  // Human-readable reason of the last failure ("invalid JSON: ...").
  std::string error_message() const;

  simdjson::dom::object root() const { return root_; }
  // The value of `key`; of its last occurrence when the key is repeated, as Python's json (and so
  // Megatron and datatrove) reads it. simdjson's at_key() would give the first.
  std::optional<simdjson::dom::element> field(std::string_view key) const;
  // nullopt when the key is missing; throws DocumentError when present but not a string. The last
  // occurrence of a repeated key, like field().
  std::optional<std::string_view> string_field(std::string_view key) const;
  // Top-level fields in input order, repeated keys included (computed on first use). A tool that
  // rewrites a field writes it once, at its first position with field()'s value, as Python would.
  const std::vector<RawField>& raw_fields();
  std::string_view line() const { return line_; }

 private:
  simdjson::dom::parser parser_;
  simdjson::dom::object root_;
  simdjson::error_code error_ = simdjson::SUCCESS;
  std::string_view line_;
  std::vector<RawField> fields_;
  bool fields_ready_ = false;
};

}  // namespace suite
