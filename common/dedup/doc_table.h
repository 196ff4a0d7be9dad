// What minhash-dedup keeps per document between its passes: key (dedup_params.h), line length,
// 128-bit exact hash of the normalised text, the raw JSON of its id field (empty: none), and
// (signature stage) one BandRecord per band. Per document that is 40 bytes + the id's length in
// the table, + 16 bytes per band (224 bytes at 14 bands) while band records are held in memory.
// The text itself is never kept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/dedup/band_file.h"

namespace suite::dedup {

struct FileExtent {
  uint32_t file = 0;       // index in the input list
  uint64_t last_line = 0;  // last line number that held a document (defines global indices)
  std::string path;
};

struct Hash128 {
  uint64_t lo = 0, hi = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;
  friend auto operator<=>(const Hash128&, const Hash128&) = default;
};

class DocTable {
 public:
  void add(uint64_t key, uint64_t length, Hash128 exact, std::string_view id_raw);
  size_t size() const { return keys_.size(); }
  uint64_t key(size_t i) const { return keys_[i]; }
  uint64_t length(size_t i) const { return lengths_[i]; }
  const Hash128& exact(size_t i) const { return exact_[i]; }
  std::string_view id_raw(size_t i) const {
    size_t b = i ? id_end_[i - 1] : 0;
    return std::string_view(ids_).substr(b, id_end_[i] - b);
  }
  // Dense index of a key; throws ToolError when the key is unknown.
  uint32_t index_of(uint64_t key) const;
  // Sorts the documents by key (after loading shards in any order).
  void sort_by_key();

  // Input files: extents by file index, and the global index (input order, line; 0-based).
  std::vector<FileExtent>& files() { return files_; }
  const std::vector<FileExtent>& files() const { return files_; }
  void set_file_count(size_t n) { files_.resize(n); }
  void note_line(uint64_t key);
  void compute_offsets();
  uint64_t global_index(size_t i) const;
  // The document's id as JSON: its id field, else its global index.
  void append_id(std::string& out, size_t i) const;

  void write(const std::string& path, const FileHeader& header, const std::vector<uint32_t>& own_files) const;
  // Appends a docs file written by write(); checks its parameters.
  void load(const std::string& path, const std::string& params, FileHeader* header_out);

 private:
  std::vector<uint64_t> keys_, lengths_;
  std::vector<Hash128> exact_;
  std::string ids_;
  std::vector<uint64_t> id_end_;
  std::vector<FileExtent> files_;
  std::vector<uint64_t> offsets_;
};

}  // namespace suite::dedup
