#include "common/dedup/band_file.h"

#include <cstring>
#include <map>
#include <sstream>

#include "common/cli/error.h"
#include "common/io/atomic_file.h"

namespace suite::dedup {

std::string band_file_path(const std::string& work_dir, uint32_t band, uint32_t shard, uint32_t shards) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "/bands/band-%03u/shard-%05u-of-%05u.bin", band, shard, shards);
  return work_dir + buf;
}

struct BinaryWriter::Impl {
  explicit Impl(const std::string& path) : file(path) {}
  AtomicFile file;
};

BinaryWriter::BinaryWriter(const std::string& path) : impl_(new Impl(path)) { buf_.reserve(1 << 20); }
BinaryWriter::~BinaryWriter() { delete impl_; }

void BinaryWriter::header(const FileHeader& h) {
  bytes(h.magic.data(), 8);
  str(h.params);
  u32(h.band);
  u32(h.shard);
  u32(h.shards);
  u64(h.count);
}

void BinaryWriter::bytes(const void* p, size_t n) {
  buf_.append(static_cast<const char*>(p), n);
  if (buf_.size() >= (1 << 20)) flush();
}

void BinaryWriter::flush() {
  impl_->file.write(buf_.data(), buf_.size());
  buf_.clear();
}

void BinaryWriter::finish() {
  flush();
  impl_->file.commit();
}

BinaryReader::BinaryReader(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) throw ToolError(path, std::string("cannot open: ") + std::strerror(errno));
  std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
}

BinaryReader::~BinaryReader() {
  if (f_) std::fclose(f_);
}

size_t BinaryReader::read_some(void* p, size_t n) { return std::fread(p, 1, n, f_); }

void BinaryReader::bytes(void* p, size_t n) {
  if (n && std::fread(p, 1, n, f_) != n) throw ToolError(path_, "truncated file");
}

std::string BinaryReader::str() {
  uint32_t n = u32();
  if (n > (1u << 30)) throw ToolError(path_, "corrupt file (string length)");
  std::string s(n, '\0');
  bytes(s.data(), n);
  return s;
}

FileHeader BinaryReader::header(const char* magic, const std::string& expected_params) {
  FileHeader h;
  h.magic.resize(8);
  bytes(h.magic.data(), 8);
  if (h.magic != magic)
    throw ToolError(path_, std::string("not a minhash-dedup ") + magic + " file (wrong magic)");
  h.params = str();
  h.band = u32();
  h.shard = u32();
  h.shards = u32();
  h.count = u64();
  if (!expected_params.empty() && h.params != expected_params)
    throw ToolError(path_, "made with different parameters (" + params_difference(h.params, expected_params) +
                               "); rerun the signatures stage with the same options or use the same options here");
  return h;
}

void write_band_file(const std::string& path, const FileHeader& h, const std::vector<BandRecord>& sorted) {
  BinaryWriter w(path);
  w.header(h);
  w.bytes(sorted.data(), sorted.size() * sizeof(BandRecord));
  w.finish();
}

BandFileReader::BandFileReader(const std::string& path, const std::string& expected_params, uint32_t band)
    : in_(path) {
  header_ = in_.header(kBandMagic, expected_params);
  if (header_.band != band) throw ToolError(path, "holds band " + std::to_string(header_.band) + ", not " + std::to_string(band));
  left_ = header_.count;
}

bool BandFileReader::next(BandRecord& r) {
  if (pos_ == buf_.size()) {
    if (left_ == 0) return false;
    size_t n = static_cast<size_t>(std::min<uint64_t>(left_, 8192));
    buf_.resize(n);
    in_.bytes(buf_.data(), n * sizeof(BandRecord));
    left_ -= n;
    pos_ = 0;
  }
  r = buf_[pos_++];
  if (!first_ && r < last_) throw ToolError(in_.path(), "band file is not sorted");
  first_ = false;
  last_ = r;
  return true;
}

std::string params_difference(const std::string& got, const std::string& want) {
  auto split = [](const std::string& s) {
    std::map<std::string, std::string> m;
    std::istringstream is(s);
    std::string tok;
    while (is >> tok) {
      size_t eq = tok.find('=');
      m[tok.substr(0, eq)] = eq == std::string::npos ? "" : tok.substr(eq + 1);
    }
    return m;
  };
  auto g = split(got), w = split(want);
  std::string out;
  for (const auto& [k, v] : w) {
    auto it = g.find(k);
    std::string gv = it == g.end() ? "(missing)" : it->second;
    if (gv != v) out += (out.empty() ? "" : ", ") + k + "=" + gv + " in the file vs " + v + " here";
  }
  for (const auto& [k, v] : g)
    if (!w.count(k)) out += (out.empty() ? "" : ", ") + k + "=" + v + " in the file only";
  return out.empty() ? "format differs" : out;
}

}  // namespace suite::dedup
