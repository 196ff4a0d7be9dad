// common/jsonl/doc_fields: the one reader of text, sentences and ids fields.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/io/line_chunker.h"
#include "common/jsonl/doc_fields.h"
#include "common/jsonl/document_error.h"

using namespace suite;

namespace {
struct Doc {
  std::string buf;
  JsonLine json;
  explicit Doc(std::string s) : buf(std::move(s)) {
    size_t n = buf.size();
    buf.append(kChunkPadding, '\0');
    REQUIRE(json.parse(std::string_view(buf.data(), n)) == JsonLineError::kNone);
  }
};
std::string reason(const std::function<void()>& f) {
  try {
    f();
  } catch (const DocumentError& e) {
    return e.reason();
  }
  return "none";
}
}  // namespace

TEST_CASE("text and sentences fields") {
  Doc d(R"({"text":"one","s":["a","b"],"bad":["a",1],"n":3})");
  CHECK(read_text(d.json, "text") == "one");
  TextOrSentences t = read_text_or_sentences(d.json, "text");
  CHECK(!t.sentences);
  std::vector<std::string> got;
  read_text_or_sentences(d.json, "s").for_each([&](std::string_view s) { got.emplace_back(s); });
  CHECK(got == std::vector<std::string>{"a", "b"});
  CHECK(reason([&] { read_text_or_sentences(d.json, "bad"); }) == "non-string field");
  CHECK(reason([&] { read_text_or_sentences(d.json, "n"); }) == "non-string field");
  CHECK(reason([&] { read_text(d.json, "n"); }) == "non-string field");
  CHECK(reason([&] { read_text(d.json, "none"); }) == "missing field");
}

TEST_CASE("ids fields") {
  Doc d(R"({"ids":[3,70000,5],"neg":[1,-2],"str":["1"]})");
  std::vector<uint32_t> ids{9};
  CHECK(read_ids(require_field(d.json, "ids").get_array().value_unsafe(), "ids", ids) == 70000);
  CHECK(ids == std::vector<uint32_t>{9, 3, 70000, 5});
  CHECK(reason([&] { read_ids(require_field(d.json, "neg").get_array().value_unsafe(), "neg", ids); }) ==
        "non-id field");
  CHECK(reason([&] { read_ids(require_field(d.json, "str").get_array().value_unsafe(), "str", ids); }) ==
        "non-id field");
}
