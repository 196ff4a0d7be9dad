#include "common/dataset/merge.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/cli/error.h"
#include "common/dataset/indexed_dataset.h"
#include "common/dataset/indexed_dataset_writer.h"

namespace suite::dataset {

void merge_datasets(const std::vector<std::string>& input_prefixes, const std::string& output_prefix) {
  if (input_prefixes.empty()) throw ToolError(output_prefix, "no input datasets to merge");
  std::unique_ptr<IndexedDatasetWriter> writer;
  for (const auto& prefix : input_prefixes) {
    IndexedDataset input(prefix);
    if (!writer) writer = std::make_unique<IndexedDatasetWriter>(output_prefix, input.dtype());
    writer->add_index(input);
  }
  writer->finalize();
}

namespace {
// os.path.splitext on a base name: a leading dot does not start an extension.
std::pair<std::string, std::string> split_ext(const std::string& name) {
  auto dot = name.rfind('.');
  if (dot == std::string::npos || name.find_first_not_of('.') > dot) return {name, ""};
  return {name.substr(0, dot), name.substr(dot)};
}
}  // namespace

std::vector<std::string> dataset_prefixes_in_directory(const std::string& dir, const std::string& output_prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ToolError(dir, "not a directory");
  const fs::path output = output_prefix.empty() ? fs::path() : fs::weakly_canonical(output_prefix, ec);
  std::set<std::string> names;  // std::string ordering = byte order = Python code-point order for UTF-8
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string file = entry.path().filename().string();
    // Temporary files of a running or killed writer (".NAME.tmp.XXXXXX") and its lock (NAME.lock).
    if ((file.starts_with(".") && file.find(".tmp.") != std::string::npos) || file.ends_with(".lock")) continue;
    auto [stem, ext] = split_ext(file);
    // The output itself, when it lies in the directory: a rerun must not merge it into itself.
    if (!output.empty() && fs::weakly_canonical(fs::path(dir) / stem, ec) == output) continue;
    const std::string partner = stem + (ext == ".idx" ? ".bin" : ".idx");
    if (!fs::is_regular_file(fs::path(dir) / partner))
      throw ToolError((fs::path(dir) / file).string(), "no matching " + partner + " next to it (every file in a merge directory must be half of a .bin/.idx pair)");
    names.insert(stem);
  }
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back((fs::path(dir) / n).string());
  return out;
}

}  // namespace suite::dataset
