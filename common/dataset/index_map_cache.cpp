#include "common/dataset/index_map_cache.h"

#include <sys/stat.h>

#include "common/cli/error.h"
#include "common/dataset/md5.h"
#include "common/io/atomic_file.h"

namespace suite::dataset {

IndexMapFiles classic_index_map_files(std::string_view data_prefix, std::string_view split, uint64_t num_samples,
                                      uint32_t seq_length, uint32_t seed) {
  const std::string base = std::string(data_prefix) + "_" + std::string(split) + "_indexmap_" +
                           std::to_string(num_samples) + "ns_" + std::to_string(seq_length) + "sl_" +
                           std::to_string(seed) + "s";
  return {base + "_doc_idx.npy", base + "_sample_idx.npy", base + "_shuffle_idx.npy", ""};
}

std::string md5_index_map_description(std::string_view data_prefix, std::string_view split, uint64_t num_samples,
                                      uint32_t seq_length, uint32_t seed, std::string_view split_string) {
  return "GPT Dataset\n\nData prefix " + std::string(data_prefix) + "\nDataset name " + std::string(split) +
         "\nNumber of samples " + std::to_string(num_samples) + "\nSequence length " + std::to_string(seq_length) +
         "\nRandom seed " + std::to_string(seed) + "\nSplit " + std::string(split_string) + "\n";
}

IndexMapFiles md5_index_map_files(std::string_view cache_dir, std::string_view description) {
  const std::string base = std::string(cache_dir) + "/" + md5_hex(description);
  return {base + "_doc_idx.npy", base + "_sample_idx.npy", base + "_shuffle_idx.npy", base + ".dsc"};
}

std::string default_index_cache_dir(std::string_view data_prefix) {
  // os.path.dirname: everything before the last '/', "" when there is none.
  auto slash = data_prefix.rfind('/');
  const std::string dir = slash == std::string_view::npos ? "" : std::string(data_prefix.substr(0, slash));
  return dir.empty() ? "index-cache" : dir + "/index-cache";
}

bool index_map_files_exist(const IndexMapFiles& files) {
  struct stat st {};
  for (const std::string* f : {&files.doc_idx, &files.sample_idx, &files.shuffle_idx, &files.description})
    if (!f->empty() && ::stat(f->c_str(), &st) != 0) return false;
  return true;
}

void save_index_map(const IndexMap& map, const IndexMapFiles& files, std::string_view description) {
  if (!files.description.empty()) {
    AtomicFile dsc(files.description);
    dsc.write(description.data(), description.size());
    dsc.commit();
  }
  write_npy(files.doc_idx, map.doc_idx);
  write_npy(files.sample_idx, map.sample_idx);
  write_npy(files.shuffle_idx, map.shuffle_idx);
}

IndexMap load_index_map(const IndexMapFiles& files) {
  IndexMap m;
  m.doc_idx = read_npy(files.doc_idx);
  m.sample_idx = read_npy(files.sample_idx);
  m.shuffle_idx = read_npy(files.shuffle_idx);
  if (m.doc_idx.dtype != DType::Int32 || m.doc_idx.shape.size() != 1)
    throw ToolError(files.doc_idx, "descr: doc_idx must be a 1-D int32 array");
  if ((m.sample_idx.dtype != DType::Int32 && m.sample_idx.dtype != DType::Int64) || m.sample_idx.shape.size() != 2 ||
      m.sample_idx.shape[1] != 2 || m.sample_idx.shape[0] == 0)
    throw ToolError(files.sample_idx, "descr: sample_idx must be an int32 or int64 array of shape (n+1, 2)");
  if ((m.shuffle_idx.dtype != DType::UInt32 && m.shuffle_idx.dtype != DType::Int64) || m.shuffle_idx.shape.size() != 1)
    throw ToolError(files.shuffle_idx, "descr: shuffle_idx must be a 1-D uint32 or int64 array");
  const uint64_t samples = m.sample_idx.shape[0] - 1;
  if (m.shuffle_idx.shape[0] != samples)
    throw ToolError(files.shuffle_idx, "shape: " + std::to_string(m.shuffle_idx.shape[0]) + " entries but " +
                                           files.sample_idx + " describes " + std::to_string(samples) + " samples");
  m.plan.total_samples = samples;
  // Every sample row must point inside doc_idx, and every shuffled id at a sample.
  const uint64_t docs = m.doc_idx.shape[0];
  for (uint64_t k = 0; k <= samples; ++k) {
    const auto [i, off] = m.sample_start(k);
    if (i < 0 || static_cast<uint64_t>(i) >= docs || off < 0)
      throw ToolError(files.sample_idx, "sample_idx[" + std::to_string(k) + "]: (" + std::to_string(i) + ", " +
                                            std::to_string(off) + ") is outside doc_idx (" + std::to_string(docs) +
                                            " entries)");
  }
  for (uint64_t j = 0; j < samples; ++j)
    if (m.shuffled(j) >= samples)
      throw ToolError(files.shuffle_idx, "shuffle_idx[" + std::to_string(j) + "]: " + std::to_string(m.shuffled(j)) +
                                             " is not below the sample count " + std::to_string(samples));
  return m;
}

}  // namespace suite::dataset
