// The files of minhash-dedup's staged mode, all little-endian binary with one header:
//   magic[8] ("MHDBAND1" band records, "MHDDOCS1" document table, "MHDREMV1" removed keys),
//   u32 length + the parameter string (dedup_params.h), u32 band, u32 shard, u32 shard count,
//   u64 record count, then the records.
// Band files hold BandRecord{hash, doc key} sorted by (hash, key): one file per band per shard,
// <work-dir>/bands/band-BBB/shard-SSSSS-of-NNNNN.bin. A reader refuses a file whose parameter
// string differs from the one expected, naming the differing parameters.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace suite::dedup {

struct BandRecord {
  uint64_t hash;
  uint64_t doc;  // document key (doc_table.h)
  friend bool operator<(const BandRecord& a, const BandRecord& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.doc < b.doc;
  }
  friend bool operator==(const BandRecord& a, const BandRecord& b) = default;
};

struct FileHeader {
  std::string magic;  // 8 bytes
  std::string params;
  uint32_t band = 0;
  uint32_t shard = 0;
  uint32_t shards = 1;
  uint64_t count = 0;
};

inline constexpr const char* kBandMagic = "MHDBAND1";
inline constexpr const char* kDocsMagic = "MHDDOCS1";
inline constexpr const char* kRemovedMagic = "MHDREMV1";

std::string band_file_path(const std::string& work_dir, uint32_t band, uint32_t shard, uint32_t shards);

// A buffered little-endian writer into an atomic file (nothing at the path until finish()).
class BinaryWriter {
 public:
  explicit BinaryWriter(const std::string& path);
  ~BinaryWriter();
  void header(const FileHeader& h);
  void bytes(const void* p, size_t n);
  void u32(uint32_t v) { bytes(&v, 4); }
  void u64(uint64_t v) { bytes(&v, 8); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void finish();

 private:
  void flush();
  struct Impl;
  Impl* impl_;
  std::string buf_;
};

class BinaryReader {
 public:
  explicit BinaryReader(const std::string& path);  // throws ToolError naming the file
  ~BinaryReader();
  BinaryReader(const BinaryReader&) = delete;
  BinaryReader& operator=(const BinaryReader&) = delete;
  // Reads and checks the header: magic, and (when expected_params is non-empty) the parameters.
  FileHeader header(const char* magic, const std::string& expected_params);
  void bytes(void* p, size_t n);  // throws on a truncated file
  size_t read_some(void* p, size_t n);
  uint32_t u32() {
    uint32_t v;
    bytes(&v, 4);
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    bytes(&v, 8);
    return v;
  }
  std::string str();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FILE* f_ = nullptr;
};

void write_band_file(const std::string& path, const FileHeader& h, const std::vector<BandRecord>& sorted);

// Streams the records of one sorted band file (the header already checked).
class BandFileReader {
 public:
  BandFileReader(const std::string& path, const std::string& expected_params, uint32_t band);
  bool next(BandRecord& r);
  const FileHeader& header() const { return header_; }

 private:
  BinaryReader in_;
  FileHeader header_;
  uint64_t left_ = 0;
  std::vector<BandRecord> buf_;
  size_t pos_ = 0;
  BandRecord last_{0, 0};
  bool first_ = true;
};

// "bands=14 vs 10, rows=8 vs 6" for two parameter strings of the form "k=v k=v ...".
std::string params_difference(const std::string& got, const std::string& want);

}  // namespace suite::dedup
