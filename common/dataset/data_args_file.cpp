#include "common/dataset/data_args_file.h"

#include <simdjson.h>

#include <fstream>
#include <sstream>

#include "common/cli/error.h"

namespace suite::dataset {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ToolError(path, "cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ToolError(path, "read error");
  return text.str();
}

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::vector<std::string> read_data_args_file(const std::string& path) {
  std::vector<std::string> words = words_of(read_all(path));
  if (words.empty()) throw ToolError(path, "holds no dataset (expected the words of --data-path)");
  return words;
}

std::array<std::vector<std::string>, 3> read_per_split_data_args_file(const std::string& path) {
  const std::string text = read_all(path);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(text).get(root))
    throw ToolError(path, std::string("not JSON: ") + simdjson::error_message(error));
  if (!root.is_object()) throw ToolError(path, "must be a JSON object with train, valid and test keys");
  std::array<std::vector<std::string>, 3> out;
  const char* keys[] = {"train", "valid", "test"};
  for (size_t i = 0; i < 3; ++i) {
    simdjson::dom::element v;
    if (root[keys[i]].get(v)) throw ToolError(path, std::string("no \"") + keys[i] + "\" key");
    const std::string what = std::string("\"") + keys[i] + "\" must be a string, a list of strings or null";
    if (v.is_null()) continue;
    if (v.is_string()) {
      out[i] = words_of(std::string(std::string_view(v)));
    } else if (v.is_array()) {
      for (simdjson::dom::element w : v.get_array()) {
        if (!w.is_string()) throw ToolError(path, what);
        out[i].emplace_back(std::string_view(w));
      }
    } else {
      throw ToolError(path, what);
    }
  }
  return out;
}

}  // namespace suite::dataset
