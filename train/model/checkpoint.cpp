#include "train/model/checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>

#include "common/cli/error.h"
#include "common/cli/numbers.h"
#include "train/model/checkpoint_io.h"

namespace gpt {
namespace fs = std::filesystem;
namespace {

using ckptio::Run;

constexpr char kMagic[8] = {'G', 'P', 'T', 'C', 'K', 'P', 'T', '1'};
constexpr const char* kLatest = "latest_checkpointed_iteration.txt";
constexpr const char* kFile = "model_optim_rng.bin";  // GPTCKPT1: the single-file format
constexpr char kShardMagic[8] = {'G', 'P', 'T', 'S', 'H', 'R', 'D', '1'};
constexpr const char* kIndex = "index.txt";

std::string shard_file(int rank, int shards) {
  return "shard_" + std::to_string(rank) + "_of_" + std::to_string(shards) + ".bin";
}

std::string iter_dir(int64_t it) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "iter_%07lld", (long long)it);
  return buf;
}

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw suite::ToolError(where, what + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

// Writes bytes to path via path.tmp + fsync + rename, then fsyncs the directory.
void write_atomic(const fs::path& path, const std::string& bytes) {
  const fs::path tmp = path.string() + ".tmp";
  errno = 0;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail(tmp.string(), "cannot create checkpoint file");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fail(tmp.string(), "write failed");
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) fail(tmp.string(), "fsync failed");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(path.string(), "rename failed");
  int dfd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::map<std::string, std::string> model_fields(const ModelConfig& m) {
  std::map<std::string, std::string> f;
  for (const auto& [k, v] : m.shape_fields()) f[k] = v;
  f["vocab-size"] = std::to_string(m.vocab_size);
  f["padded-vocab-size"] = std::to_string(m.padded_vocab_size);
  return f;
}


// The key=value lines both formats share (model shape, state, arguments).
std::string state_header(const Checkpoint& c, size_t num_params) {
  const TrainState& s = c.state;
  std::ostringstream h;
  for (const auto& [k, v] : model_fields(c.model)) h << "model." << k << "=" << v << "\n";
  h << "init-method-std=" << c.model.init_method_std << "\n"
    << "iteration=" << s.iteration << "\n"
    << "consumed-train-samples=" << s.consumed_train_samples << "\n"
    << "consumed-valid-samples=" << s.consumed_valid_samples << "\n"
    << "skipped-iterations=" << s.skipped_iterations << "\n"
    << "nan-iterations=" << s.nan_iterations << "\n"
    << "adam-step=" << s.adam_step << "\n"
    << "seed=" << s.seed << "\n"
    << "loss-scale=" << std::setprecision(17) << s.loss_scale << "\n"
    << "loss-scale-growth-tracker=" << s.loss_scale_growth_tracker << "\n"
    << "loss-scale-hysteresis-tracker=" << s.loss_scale_hysteresis_tracker << "\n"
    << "num-params=" << num_params << "\n";
  std::string args = c.arguments;
  for (char& ch : args)
    if (ch == '\n') ch = ' ';
  h << "arguments=" << args << "\n";
  return h.str();
}

// Writes a shard: the header, then params, adam m and adam v of every run (global offsets in
// the header's `ranges`, data read from the local buffers at each run's local offset).
void write_shard(const fs::path& file, const Checkpoint& c, size_t num_params,
                 const std::vector<Run>& runs, const std::vector<ckptio::Source>& sources,
                 int rank, int shards) {
  std::ostringstream h;
  h << state_header(c, num_params) << "shard=" << rank << "\nshards=" << shards << "\nranges=";
  size_t count = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    h << (i ? "," : "") << runs[i].global << "-" << runs[i].global + runs[i].n;
    count += runs[i].n;
  }
  h << "\n";
  const std::string header = h.str();
  std::string bytes;
  bytes.reserve(sizeof kShardMagic + 8 + header.size() + 3 * count * sizeof(float) + 8);
  bytes.append(kShardMagic, sizeof kShardMagic);
  const uint64_t hlen = header.size();
  bytes.append(reinterpret_cast<const char*>(&hlen), sizeof hlen);
  bytes += header;
  for (int w = 0; w < 3; ++w)
    for (const Run& r : runs)
      bytes.append(reinterpret_cast<const char*>(sources.at(size_t(r.source))[w] + r.local),
                   r.n * sizeof(float));
  const uint64_t sum = XXH64(bytes.data(), bytes.size(), 0);
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  write_atomic(file, bytes);
}

}  // namespace

void ckptio::save_runs(const std::string& dir, const Checkpoint& c, size_t num_params,
               const std::vector<Run>& runs, const std::vector<Source>& sources,
               const std::vector<std::string>& tensors, int rank,
               int shards, const AllOk& all_ok) {
  const fs::path root(dir), final_dir = root / iter_dir(c.state.iteration);
  std::string error, error_where = final_dir.string();
  try {
    std::error_code ec;
    fs::create_directories(final_dir, ec);
    if (ec) throw suite::ToolError(final_dir.string(), "cannot create checkpoint directory: " +
                                                           ec.message());
    write_shard(final_dir / shard_file(rank, shards), c, num_params, runs, sources, rank, shards);
  } catch (const suite::ToolError& e) {
    error = e.what();
    if (!e.where().empty()) error_where = e.where();
  }
  if (!all_ok(error.empty())) {
    if (!error.empty()) throw suite::ToolError(error_where, error);
    throw suite::ToolError(final_dir.string(), "another rank could not write its checkpoint shard; "
                                               "the checkpoint is incomplete and not marked latest");
  }
  if (rank == 0) {
    try {
      std::ostringstream idx;
      idx << "format=GPTSHRD1\nshards=" << shards << "\nnum-params=" << num_params << "\n";
      for (int r = 0; r < shards; ++r) idx << "file=" << shard_file(r, shards) << "\n";
      for (const std::string& t : tensors) idx << "tensor=" << t << "\n";
      write_atomic(final_dir / kIndex, idx.str());
      write_atomic(root / kLatest, std::to_string(c.state.iteration) + "\n");
    } catch (const suite::ToolError& e) {
      error = e.what();
      if (!e.where().empty()) error_where = e.where();
    }
  }
  // Nobody goes on (or exits) before the checkpoint is marked latest.
  if (!all_ok(error.empty()))
    throw suite::ToolError(error_where, error.empty() ? "rank 0 could not mark the checkpoint "
                                                          "latest" : error);
}

void save_checkpoint(const std::string& dir, const Checkpoint& c, const ShardSpec& spec,
                     const AllOk& all_ok) {
  std::vector<Run> runs;
  for (const auto& [lo, hi] : spec.ranges) runs.push_back({lo, lo, hi - lo, 0});
  ckptio::save_runs(dir, c, c.params.size(), runs,
                    {{c.params.data(), c.adam_m.data(), c.adam_v.data()}}, spec.tensors,
                    spec.rank, spec.shards, all_ok);
}

void save_checkpoint(const std::string& dir, const Checkpoint& c) {
  ShardSpec spec;
  spec.ranges = {{0, c.params.size()}};
  save_checkpoint(dir, c, spec, [](bool ok) { return ok; });
}

bool has_checkpoint(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / kLatest, ec);
}

namespace ckptio {

// One file of either format, mapped and checked: its key=value header and the bytes after it.
struct RawFile {
  std::string where;
  const char* bytes = nullptr;
  size_t size = 0;
  std::map<std::string, std::string> kv;
  size_t data = 0;  // offset of the first float
  bool sharded = false;
  RawFile() = default;
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;
  ~RawFile() {
    if (bytes) ::munmap(const_cast<char*>(bytes), size);
  }
  // The header value of key as a T; an error naming the file and key when it is absent or not one.
  template <class T = long>
  T num(const std::string& key) const {
    auto f = kv.find(key);
    if (f == kv.end()) throw suite::ToolError(where, "checkpoint header lacks " + key);
    const std::optional<T> v = suite::parse_number<T>(f->second);
    if (!v) throw suite::ToolError(where, "checkpoint header: " + key + " is not a number");
    return *v;
  }
};

// Maps the file (the page cache holds it; a rank reads only the pieces it needs) and checks the
// magic and the checksum.
void open_file(const fs::path& file, RawFile& f) {
  f.where = file.string();
  errno = 0;
  const int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) {
    errno = 0;
    throw suite::ToolError(f.where, "checkpoint file is missing");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(f.where, "cannot stat the checkpoint file");
  }
  f.size = size_t(st.st_size);
  if (f.size < sizeof kMagic + 16) {
    ::close(fd);
    throw suite::ToolError(f.where, "not a gpt-train checkpoint (bad magic)");
  }
  void* m = ::mmap(nullptr, f.size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) fail(f.where, "cannot map the checkpoint file");
  f.bytes = static_cast<const char*>(m);
  f.sharded = std::memcmp(f.bytes, kShardMagic, sizeof kShardMagic) == 0;
  if (!f.sharded && std::memcmp(f.bytes, kMagic, sizeof kMagic) != 0)
    throw suite::ToolError(f.where, "not a gpt-train checkpoint (bad magic)");
  uint64_t stored;
  std::memcpy(&stored, f.bytes + f.size - 8, 8);
  if (XXH64(f.bytes, f.size - 8, 0) != stored)
    throw suite::ToolError(f.where, "checkpoint is corrupt (checksum mismatch)");
  uint64_t hlen;
  std::memcpy(&hlen, f.bytes + 8, 8);
  if (hlen > f.size - 24) throw suite::ToolError(f.where, "checkpoint header truncated");
  std::istringstream hs(std::string(f.bytes + 16, hlen));
  for (std::string line; std::getline(hs, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) f.kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  f.data = 16 + hlen;
}

// Model shape, state and arguments from a header.
void read_state(const RawFile& f, Checkpoint& c) {
  c.model.num_layers = int(f.num("model.num-layers"));
  c.model.hidden_size = int(f.num("model.hidden-size"));
  c.model.num_heads = int(f.num("model.num-attention-heads"));
  c.model.ffn_hidden_size = int(f.num("model.ffn-hidden-size"));
  c.model.seq_length = int(f.num("model.seq-length"));
  c.model.max_position_embeddings = int(f.num("model.max-position-embeddings"));
  c.model.vocab_size = int(f.num("model.vocab-size"));
  c.model.padded_vocab_size = int(f.num("model.padded-vocab-size"));
  c.model.init_method_std = f.num<float>("init-method-std");
  c.state.iteration = f.num("iteration");
  c.state.consumed_train_samples = f.num("consumed-train-samples");
  c.state.consumed_valid_samples = f.num("consumed-valid-samples");
  c.state.skipped_iterations = f.num("skipped-iterations");
  c.state.nan_iterations = f.num("nan-iterations");
  c.state.adam_step = f.num("adam-step");
  c.state.seed = f.num<unsigned long long>("seed");
  if (f.kv.count("loss-scale")) {  // absent from checkpoints written before fp16 loss scaling
    c.state.loss_scale = f.num<double>("loss-scale");
    c.state.loss_scale_growth_tracker = f.num("loss-scale-growth-tracker");
    c.state.loss_scale_hysteresis_tracker = f.num("loss-scale-hysteresis-tracker");
  }
  const auto arguments = f.kv.find("arguments");
  c.arguments = arguments == f.kv.end() ? "" : arguments->second;
}

// One stored range: global [lo, hi) at float index `pos` of its file's sections.
struct Reader::Piece {
  size_t lo, hi;
  const RawFile* file;
  size_t pos, count;  // position in the file's sections, floats per section
};

Reader::~Reader() = default;

Reader::Reader(const std::string& dir) {
  const fs::path root(dir);
  std::ifstream latest(root / kLatest);
  if (!latest)
    throw suite::ToolError(dir, std::string("not a checkpoint directory (no ") + kLatest + ")");
  int64_t it = -1;
  latest >> it;
  if (!latest || it < 0)
    throw suite::ToolError((root / kLatest).string(), "does not hold an iteration number");
  const fs::path iter = root / iter_dir(it);
  where_ = iter.string();
  std::error_code ec;
  if (fs::exists(iter / kFile, ec)) {  // the single-file format: the whole buffers
    files_.push_back(std::make_unique<RawFile>());
    RawFile& f = *files_.back();
    open_file(iter / kFile, f);
    if (f.sharded) throw suite::ToolError(f.where, "a shard file where model_optim_rng.bin belongs");
    read_state(f, meta_);
    n_ = size_t(f.num("num-params"));
    if (f.data + 3 * n_ * sizeof(float) + 8 != f.size)
      throw suite::ToolError(f.where, "checkpoint size does not match its header");
    pieces_.push_back({0, n_, &f, 0, n_});
    return;
  }
  const fs::path index = iter / kIndex;
  std::ifstream in(index);
  if (!in)
    throw suite::ToolError(index.string(), "checkpoint index is missing (an incomplete "
                                           "checkpoint?)");
  std::vector<std::string> names;
  int shards = -1;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("file=", 0) == 0) names.push_back(line.substr(5));
    if (line.rfind("shards=", 0) == 0) shards = std::atoi(line.c_str() + 7);
  }
  if (shards <= 0 || int(names.size()) != shards)
    throw suite::ToolError(index.string(), "index lists " + std::to_string(names.size()) +
                                               " shard files for shards=" + std::to_string(shards));
  for (int r = 0; r < shards; ++r) {
    files_.push_back(std::make_unique<RawFile>());
    RawFile& f = *files_.back();
    open_file(iter / names[r], f);
    if (!f.sharded) throw suite::ToolError(f.where, "not a checkpoint shard (bad magic)");
    if (f.num("shard") != r || f.num("shards") != shards)
      throw suite::ToolError(f.where, "shard number does not match " + index.string());
    if (r == 0) {
      read_state(f, meta_);
      n_ = size_t(f.num("num-params"));
    } else if (size_t(f.num("num-params")) != n_ || f.num("iteration") != meta_.state.iteration) {
      throw suite::ToolError(f.where, "shard belongs to another checkpoint (num-params or "
                                      "iteration differ from shard 0)");
    }
    const size_t first = pieces_.size();
    size_t count = 0;
    const auto rs = f.kv.find("ranges");
    const std::string ranges = rs == f.kv.end() ? "" : rs->second;
    for (size_t b = 0; b < ranges.size();) {
      size_t e = ranges.find(',', b);
      if (e == std::string::npos) e = ranges.size();
      const std::string item = ranges.substr(b, e - b);
      size_t lo = 0, hi = 0;
      if (std::sscanf(item.c_str(), "%zu-%zu", &lo, &hi) != 2 || lo > hi || hi > n_)
        throw suite::ToolError(f.where, "bad range '" + item + "' in the shard header");
      pieces_.push_back({lo, hi, &f, count, 0});
      count += hi - lo;
      b = e + 1;
    }
    if (f.data + 3 * count * sizeof(float) + 8 != f.size)
      throw suite::ToolError(f.where, "shard size does not match its header");
    for (size_t i = first; i < pieces_.size(); ++i) pieces_[i].count = count;
  }
  std::sort(pieces_.begin(), pieces_.end(),
            [](const Piece& a, const Piece& b) { return a.lo < b.lo; });
  pieces_.erase(std::remove_if(pieces_.begin(), pieces_.end(),
                               [](const Piece& p) { return p.lo == p.hi; }),
                pieces_.end());
  size_t at = 0;
  for (const Piece& p : pieces_) {
    if (p.lo != at)
      throw suite::ToolError(where_, "shards cover parameter " + std::to_string(std::min(at, p.lo)) +
                                         (p.lo > at ? " 0 times" : " twice") + " (want once)");
    at = p.hi;
  }
  if (at != n_)
    throw suite::ToolError(where_, "shards cover parameter " + std::to_string(at) +
                                       " 0 times (want once)");
}

void Reader::read(int which, size_t g, size_t n, float* out) const {
  if (g + n > n_) throw suite::ToolError(where_, "read past the checkpoint's parameters");
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), g,
                             [](size_t v, const Piece& p) { return v < p.lo; });
  --it;  // the piece holding g (the pieces tile [0, n))
  while (n > 0) {
    const Piece& p = *it++;
    const size_t take = std::min(n, p.hi - g);
    const char* src = p.file->bytes + p.file->data +
                      (size_t(which) * p.count + p.pos + (g - p.lo)) * sizeof(float);
    std::memcpy(out, src, take * sizeof(float));
    out += take;
    g += take;
    n -= take;
  }
}

}  // namespace ckptio

Checkpoint load_checkpoint(const std::string& dir) {
  const ckptio::Reader r(dir);
  Checkpoint c = r.meta();
  const size_t n = r.num_params();
  for (auto* v : {&c.params, &c.adam_m, &c.adam_v}) v->resize(n);
  r.read(0, 0, n, c.params.data());
  r.read(1, 0, n, c.adam_m.data());
  r.read(2, 0, n, c.adam_v.data());
  return c;
}

void check_same_model(const ModelConfig& saved, const ModelConfig& run, const std::string& dir,
                      bool same_padding) {
  const auto a = model_fields(saved), b = model_fields(run);
  std::string diff;
  for (const auto& [k, v] : a)
    if (b.at(k) != v && (same_padding || k != "padded-vocab-size")) diff += (diff.empty() ? "" : "; ") + ("--" + k + ": checkpoint " + v +
                                                           ", this run " + b.at(k));
  if (!diff.empty())
    throw suite::ToolError(dir, "checkpoint was saved for another model shape (" + diff + ")");
}

}  // namespace gpt
