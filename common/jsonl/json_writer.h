// Writing JSON: strings with correct escaping (UTF-8 kept as is, like json.dumps(ensure_ascii=False)),
// integer arrays, and objects assembled from raw fields passed through unchanged.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace suite {

// Appends `s` (valid UTF-8) as a quoted JSON string.
void append_json_string(std::string& out, std::string_view s);

// Appends a JSON array of integers: [1,2,3].
template <class Int>
void append_json_int_array(std::string& out, std::span<const Int> values);

// Builds one JSON object on a line: {"a":1,"b":"x"}\n
class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
  // A field copied from the input: raw key (with quotes) and raw value text.
  JsonObjectWriter& raw_field(std::string_view raw_key, std::string_view raw_value);
  JsonObjectWriter& string_field(std::string_view key, std::string_view value);
  // `raw_value` is already JSON (a number, an array written with append_json_*, ...).
  JsonObjectWriter& json_field(std::string_view key, std::string_view raw_value);
  // Starts a field and returns the buffer to append its JSON value to.
  std::string& begin_field(std::string_view key);
  void end_line() { out_ += "}\n"; }

 private:
  void separator() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  std::string& out_;
  bool first_ = true;
};

void append_uint(std::string& out, uint64_t v);
void append_int(std::string& out, int64_t v);

template <class Int>
void append_json_int_array(std::string& out, std::span<const Int> values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    if constexpr (std::is_signed_v<Int>)
      append_int(out, static_cast<int64_t>(values[i]));
    else
      append_uint(out, static_cast<uint64_t>(values[i]));
  }
  out += ']';
}

}  // namespace suite
