#include "train/model/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "common/cli/error.h"

namespace gpt {
namespace fs = std::filesystem;
namespace {

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
  return {{"num-layers", std::to_string(m.num_layers)},
          {"hidden-size", std::to_string(m.hidden_size)},
          {"num-attention-heads", std::to_string(m.num_heads)},
          {"ffn-hidden-size", std::to_string(m.ffn_hidden_size)},
          {"seq-length", std::to_string(m.seq_length)},
          {"max-position-embeddings", std::to_string(m.max_position_embeddings)},
          {"vocab-size", std::to_string(m.vocab_size)},
          {"padded-vocab-size", std::to_string(m.padded_vocab_size)}};
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

void write_shard(const fs::path& file, const Checkpoint& c, const ShardSpec& spec) {
  const size_t n = c.params.size();
  std::ostringstream h;
  h << state_header(c, n) << "shard=" << spec.rank << "\nshards=" << spec.shards << "\nranges=";
  for (size_t i = 0; i < spec.ranges.size(); ++i)
    h << (i ? "," : "") << spec.ranges[i].first << "-" << spec.ranges[i].second;
  h << "\n";
  const std::string header = h.str();
  std::string bytes(kShardMagic, sizeof kShardMagic);
  const uint64_t hlen = header.size();
  bytes.append(reinterpret_cast<const char*>(&hlen), sizeof hlen);
  bytes += header;
  for (const auto* v : {&c.params, &c.adam_m, &c.adam_v})
    for (const auto& [lo, hi] : spec.ranges)
      bytes.append(reinterpret_cast<const char*>(v->data() + lo), (hi - lo) * sizeof(float));
  const uint64_t sum = XXH64(bytes.data(), bytes.size(), 0);
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  write_atomic(file, bytes);
}

}  // namespace

void save_checkpoint(const std::string& dir, const Checkpoint& c, const ShardSpec& spec,
                     const AllOk& all_ok) {
  const fs::path root(dir), final_dir = root / iter_dir(c.state.iteration);
  std::string error, error_where = final_dir.string();
  try {
    std::error_code ec;
    fs::create_directories(final_dir, ec);
    if (ec) throw suite::ToolError(final_dir.string(), "cannot create checkpoint directory: " +
                                                           ec.message());
    write_shard(final_dir / shard_file(spec.rank, spec.shards), c, spec);
  } catch (const suite::ToolError& e) {
    error = e.what();
    if (!e.where().empty()) error_where = e.where();
  }
  if (!all_ok(error.empty())) {
    if (!error.empty()) throw suite::ToolError(error_where, error);
    throw suite::ToolError(final_dir.string(), "another rank could not write its checkpoint shard; "
                                               "the checkpoint is incomplete and not marked latest");
  }
  if (spec.rank == 0) {
    try {
      std::ostringstream idx;
      idx << "format=GPTSHRD1\nshards=" << spec.shards << "\nnum-params=" << c.params.size()
          << "\n";
      for (int r = 0; r < spec.shards; ++r) idx << "file=" << shard_file(r, spec.shards) << "\n";
      for (const std::string& t : spec.tensors) idx << "tensor=" << t << "\n";
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

void save_checkpoint(const std::string& dir, const Checkpoint& c) {
  ShardSpec spec;
  spec.ranges = {{0, c.params.size()}};
  save_checkpoint(dir, c, spec, [](bool ok) { return ok; });
}

bool has_checkpoint(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / kLatest, ec);
}

namespace {

// One file of either format, checked: its key=value header and the bytes after it.
struct RawFile {
  std::string where, bytes;
  std::map<std::string, std::string> kv;
  size_t data = 0;  // offset of the first float
  bool sharded = false;
  int64_t num(const std::string& key) const {
    auto f = kv.find(key);
    if (f == kv.end()) throw suite::ToolError(where, "checkpoint header lacks " + key);
    try {
      return std::stoll(f->second);
    } catch (const std::exception&) {
      throw suite::ToolError(where, "checkpoint header: " + key + " is not a number");
    }
  }
};

RawFile read_file(const fs::path& file) {
  RawFile f;
  f.where = file.string();
  std::ifstream in(file, std::ios::binary);
  if (!in) throw suite::ToolError(f.where, "checkpoint file is missing");
  f.bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string& bytes = f.bytes;
  if (bytes.size() < sizeof kMagic + 16) throw suite::ToolError(f.where, "not a gpt-train checkpoint (bad magic)");
  f.sharded = std::memcmp(bytes.data(), kShardMagic, sizeof kShardMagic) == 0;
  if (!f.sharded && std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw suite::ToolError(f.where, "not a gpt-train checkpoint (bad magic)");
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (XXH64(bytes.data(), bytes.size() - 8, 0) != stored)
    throw suite::ToolError(f.where, "checkpoint is corrupt (checksum mismatch)");
  uint64_t hlen;
  std::memcpy(&hlen, bytes.data() + 8, 8);
  if (16 + hlen > bytes.size() - 8) throw suite::ToolError(f.where, "checkpoint header truncated");
  std::istringstream hs(bytes.substr(16, hlen));
  for (std::string line; std::getline(hs, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) f.kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  f.data = 16 + hlen;
  return f;
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
  auto kv = f.kv;
  c.model.init_method_std = std::stof(kv["init-method-std"]);
  c.state.iteration = f.num("iteration");
  c.state.consumed_train_samples = f.num("consumed-train-samples");
  c.state.consumed_valid_samples = f.num("consumed-valid-samples");
  c.state.skipped_iterations = f.num("skipped-iterations");
  c.state.nan_iterations = f.num("nan-iterations");
  c.state.adam_step = f.num("adam-step");
  c.state.seed = uint64_t(std::stoull(kv["seed"]));
  if (kv.count("loss-scale")) {  // absent from checkpoints written before fp16 loss scaling
    c.state.loss_scale = std::stod(kv["loss-scale"]);
    c.state.loss_scale_growth_tracker = f.num("loss-scale-growth-tracker");
    c.state.loss_scale_hysteresis_tracker = f.num("loss-scale-hysteresis-tracker");
  }
  c.arguments = kv["arguments"];
}

Checkpoint load_single_file(const fs::path& file) {
  const RawFile f = read_file(file);
  if (f.sharded) throw suite::ToolError(f.where, "a shard file where model_optim_rng.bin belongs");
  Checkpoint c;
  read_state(f, c);
  const size_t n = size_t(f.num("num-params"));
  if (f.data + 3 * n * sizeof(float) + 8 != f.bytes.size())
    throw suite::ToolError(f.where, "checkpoint size does not match its header");
  const char* p = f.bytes.data() + f.data;
  for (auto* v : {&c.params, &c.adam_m, &c.adam_v}) {
    v->resize(n);
    std::memcpy(v->data(), p, n * sizeof(float));
    p += n * sizeof(float);
  }
  return c;
}

// The shards of one iteration reassembled by their global offsets.
Checkpoint load_shards(const fs::path& dir) {
  const fs::path index = dir / kIndex;
  std::ifstream in(index);
  if (!in)
    throw suite::ToolError(index.string(), "checkpoint index is missing (an incomplete "
                                           "checkpoint?)");
  std::vector<std::string> files;
  int shards = -1;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("file=", 0) == 0) files.push_back(line.substr(5));
    if (line.rfind("shards=", 0) == 0) shards = std::atoi(line.c_str() + 7);
  }
  if (shards <= 0 || int(files.size()) != shards)
    throw suite::ToolError(index.string(), "index lists " + std::to_string(files.size()) +
                                               " shard files for shards=" + std::to_string(shards));
  Checkpoint c;
  std::vector<char> covered;
  size_t n = 0;
  for (int r = 0; r < shards; ++r) {
    const RawFile f = read_file(dir / files[r]);
    if (!f.sharded) throw suite::ToolError(f.where, "not a checkpoint shard (bad magic)");
    if (f.num("shard") != r || f.num("shards") != shards)
      throw suite::ToolError(f.where, "shard number does not match " + index.string());
    if (r == 0) {
      read_state(f, c);
      n = size_t(f.num("num-params"));
      for (auto* v : {&c.params, &c.adam_m, &c.adam_v}) v->assign(n, 0.0f);
      covered.assign(n, 0);
    } else if (size_t(f.num("num-params")) != n || f.num("iteration") != c.state.iteration) {
      throw suite::ToolError(f.where, "shard belongs to another checkpoint (num-params or "
                                      "iteration differ from shard 0)");
    }
    std::vector<std::pair<size_t, size_t>> ranges;
    size_t count = 0;
    std::istringstream rs(f.kv.count("ranges") ? f.kv.at("ranges") : "");
    for (std::string item; std::getline(rs, item, ',');) {
      size_t lo = 0, hi = 0;
      if (std::sscanf(item.c_str(), "%zu-%zu", &lo, &hi) != 2 || lo > hi || hi > n)
        throw suite::ToolError(f.where, "bad range '" + item + "' in the shard header");
      ranges.push_back({lo, hi});
      count += hi - lo;
    }
    if (f.data + 3 * count * sizeof(float) + 8 != f.bytes.size())
      throw suite::ToolError(f.where, "shard size does not match its header");
    const char* p = f.bytes.data() + f.data;
    for (auto* v : {&c.params, &c.adam_m, &c.adam_v})
      for (const auto& [lo, hi] : ranges) {
        std::memcpy(v->data() + lo, p, (hi - lo) * sizeof(float));
        p += (hi - lo) * sizeof(float);
      }
    for (const auto& [lo, hi] : ranges)
      for (size_t i = lo; i < hi; ++i) ++covered[i];
  }
  for (size_t i = 0; i < n; ++i)
    if (covered[i] != 1)
      throw suite::ToolError(dir.string(), "shards cover parameter " + std::to_string(i) + " " +
                                               std::to_string(int(covered[i])) +
                                               " times (want once)");
  return c;
}

}  // namespace

Checkpoint load_checkpoint(const std::string& dir) {
  const fs::path root(dir);
  std::ifstream latest(root / kLatest);
  if (!latest)
    throw suite::ToolError(dir, std::string("not a checkpoint directory (no ") + kLatest + ")");
  int64_t it = -1;
  latest >> it;
  if (!latest || it < 0)
    throw suite::ToolError((root / kLatest).string(), "does not hold an iteration number");
  const fs::path iter = root / iter_dir(it);
  std::error_code ec;
  if (fs::exists(iter / kFile, ec)) return load_single_file(iter / kFile);
  return load_shards(iter);
}

void check_same_model(const ModelConfig& saved, const ModelConfig& run, const std::string& dir) {
  const auto a = model_fields(saved), b = model_fields(run);
  std::string diff;
  for (const auto& [k, v] : a)
    if (b.at(k) != v) diff += (diff.empty() ? "" : "; ") + ("--" + k + ": checkpoint " + v +
                                                           ", this run " + b.at(k));
  if (!diff.empty())
    throw suite::ToolError(dir, "checkpoint was saved for another model shape (" + diff + ")");
}

}  // namespace gpt
