#include "train/data/vocab.h"

#include <simdjson.h>

#include <filesystem>

#include "common/cli/error.h"

namespace gpt {

int vocab_size_from_file(const std::string& vocab_json, const std::string& merges_txt) {
  if (!merges_txt.empty() && !std::filesystem::is_regular_file(merges_txt))
    throw suite::ToolError(merges_txt, "merge file not found");
  simdjson::padded_string text;
  if (simdjson::padded_string::load(vocab_json).get(text))
    throw suite::ToolError(vocab_json, "vocab file not found or unreadable");
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(text).get(obj))
    throw suite::ToolError(vocab_json, "vocab file is not a JSON object of token -> id");
  int64_t max_id = -1;
  size_t n = 0;
  for (auto field : obj) {
    int64_t id;
    if (field.value.get(id))
      throw suite::ToolError(vocab_json, "vocab entry '" + std::string(field.key) +
                                             "' does not map to an integer id");
    max_id = std::max(max_id, id);
    ++n;
  }
  if (n == 0) throw suite::ToolError(vocab_json, "vocab file is empty");
  return int(std::max<int64_t>(int64_t(n), max_id + 1));
}

}  // namespace gpt
