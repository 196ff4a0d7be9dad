// common/jsonl: parsing with raw pass-through of fields, and the JSON writer's escaping.
#include <doctest/doctest.h>

#include <string>

#include "common/io/line_chunker.h"
#include "common/jsonl/document_error.h"
#include "common/jsonl/json_line.h"
#include "common/jsonl/json_writer.h"

using namespace suite;

namespace {
// JsonLine needs readable padding after the line, as LineChunk provides.
struct Padded {
  std::string buf;
  size_t n;
  explicit Padded(std::string s) : buf(std::move(s)), n(buf.size()) { buf.append(kChunkPadding, '\0'); }
  std::string_view view() const { return {buf.data(), n}; }
};
}  // namespace

TEST_CASE("fields come back raw, in order, and text fields unescaped") {
  Padded line(R"({"id": 12.50, "text":"a\"b\u00e9", "meta" : {"x": [1, {"y": "}"}]} , "n":null})");
  JsonLine doc;
  REQUIRE(doc.parse(line.view()) == JsonLineError::kNone);
  CHECK(*doc.string_field("text") == "a\"b\xC3\xA9");
  CHECK(!doc.string_field("missing"));
  CHECK_THROWS_AS((void)doc.string_field("id"), DocumentError);
  const auto& f = doc.raw_fields();
  REQUIRE(f.size() == 4);
  CHECK(f[0].raw_key == "\"id\"");
  CHECK(f[0].raw_value == "12.50");
  CHECK(f[1].raw_value == R"("a\"b\u00e9")");
  CHECK(f[2].key == "meta");
  CHECK(f[2].raw_value == R"({"x": [1, {"y": "}"}]})");
  CHECK(f[3].raw_value == "null");
}

TEST_CASE("a repeated key reads as its last value, as in Python; raw fields keep every occurrence") {
  Padded line(R"({"text": "first", "id": 1, "te\u0078t": "second", "text": "last", "id": "x"})");
  JsonLine doc;
  REQUIRE(doc.parse(line.view()) == JsonLineError::kNone);
  CHECK(*doc.string_field("text") == "last");
  REQUIRE(doc.field("id"));
  CHECK(doc.field("id")->is_string());
  CHECK(!doc.field("missing"));
  CHECK(doc.raw_fields().size() == 5);
}

TEST_CASE("invalid JSON, invalid UTF-8 and non-objects are told apart") {
  JsonLine doc;
  CHECK(doc.parse(Padded(R"({"text": "x",})").view()) == JsonLineError::kInvalidJson);
  CHECK(doc.parse(Padded("{\"text\": \"\xff\"}").view()) == JsonLineError::kInvalidUtf8);
  CHECK(doc.parse(Padded("[1]").view()) == JsonLineError::kNotAnObject);
  Padded empty("{}");  // the line must outlive the use of its fields
  CHECK(doc.parse(empty.view()) == JsonLineError::kNone);
  CHECK(doc.raw_fields().empty());
}

TEST_CASE("the writer escapes what JSON requires and keeps UTF-8") {
  std::string out;
  append_json_string(out, std::string("q\"b\\n\n\t\x01\x1f\xC3\xA9/", 12));
  CHECK(out == "\"q\\\"b\\\\n\\n\\t\\u0001\\u001f\xC3\xA9/\"");
  std::string obj;
  JsonObjectWriter w(obj);
  w.raw_field("\"id\"", "7").string_field("text", "hi");
  std::vector<int32_t> ids{1, -2, 50256};
  append_json_int_array(w.begin_field("ids"), std::span<const int32_t>(ids));
  w.end_line();
  CHECK(obj == "{\"id\":7,\"text\":\"hi\",\"ids\":[1,-2,50256]}\n");
  // What the writer produces parses back to the same string.
  JsonLine doc;
  Padded back("{\"t\":" + out + "}");
  REQUIRE(doc.parse(back.view()) == JsonLineError::kNone);
  CHECK(*doc.string_field("t") == std::string("q\"b\\n\n\t\x01\x1f\xC3\xA9/", 12));
}
