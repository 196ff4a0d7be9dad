// Megatron-core's data lists kept in files, for lists too long for a command line:
// --data-args-path (the words of --data-path, blank separated) and --per-split-data-args-path (a
// JSON object whose "train", "valid" and "test" each hold a string of such words, a list of words,
// or null).
#pragma once

#include <array>
#include <string>
#include <vector>

namespace suite::dataset {

// The words of a --data-args-path file; ToolError naming the file when it cannot be read or holds none.
std::vector<std::string> read_data_args_file(const std::string& path);

// The train, valid and test words of a --per-split-data-args-path file (empty: null); ToolError
// naming the file for unreadable or malformed JSON, a missing key, or a value of another type.
std::array<std::vector<std::string>, 3> read_per_split_data_args_file(const std::string& path);

}  // namespace suite::dataset
