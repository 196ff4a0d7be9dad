#include "common/jsonl/json_writer.h"

#include <charconv>

namespace suite {

void append_json_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  size_t run = 0;  // start of the current run of bytes that need no escaping
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

JsonObjectWriter& JsonObjectWriter::raw_field(std::string_view raw_key, std::string_view raw_value) {
  separator();
  out_ += raw_key;
  out_ += ':';
  out_ += raw_value;
  return *this;
}

JsonObjectWriter& JsonObjectWriter::string_field(std::string_view key, std::string_view value) {
  append_json_string(begin_field(key), value);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::json_field(std::string_view key, std::string_view raw_value) {
  begin_field(key) += raw_value;
  return *this;
}

std::string& JsonObjectWriter::begin_field(std::string_view key) {
  separator();
  append_json_string(out_, key);
  out_ += ':';
  return out_;
}

}  // namespace suite
