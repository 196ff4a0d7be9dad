// Vocabulary size from a GPT-2 vocab.json (the number of entries), checked against merges.txt.
#pragma once

#include <string>

namespace gpt {

// Throws suite::ToolError naming the file when it is missing or not a JSON object.
int vocab_size_from_file(const std::string& vocab_json, const std::string& merges_txt);

}  // namespace gpt
