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
constexpr const char* kFile = "model_optim_rng.bin";

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

void append_floats(std::string& out, const std::vector<float>& v) {
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

}  // namespace

void save_checkpoint(const std::string& dir, const Checkpoint& c) {
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
    << "num-params=" << c.params.size() << "\n";
  std::string args = c.arguments;
  for (char& ch : args)
    if (ch == '\n') ch = ' ';
  h << "arguments=" << args << "\n";
  const std::string header = h.str();
  std::string bytes(kMagic, sizeof kMagic);
  const uint64_t hlen = header.size();
  bytes.append(reinterpret_cast<const char*>(&hlen), sizeof hlen);
  bytes += header;
  append_floats(bytes, c.params);
  append_floats(bytes, c.adam_m);
  append_floats(bytes, c.adam_v);
  const uint64_t sum = XXH64(bytes.data(), bytes.size(), 0);
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);

  const fs::path root(dir), final_dir = root / iter_dir(s.iteration);
  std::error_code ec;
  fs::create_directories(final_dir, ec);
  if (ec) throw suite::ToolError(final_dir.string(), "cannot create checkpoint directory: " +
                                                         ec.message());
  write_atomic(final_dir / kFile, bytes);
  write_atomic(root / kLatest, std::to_string(s.iteration) + "\n");
}

bool has_checkpoint(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / kLatest, ec);
}

Checkpoint load_checkpoint(const std::string& dir) {
  const fs::path root(dir);
  std::ifstream latest(root / kLatest);
  if (!latest)
    throw suite::ToolError(dir, std::string("not a checkpoint directory (no ") + kLatest + ")");
  int64_t it = -1;
  latest >> it;
  if (!latest || it < 0)
    throw suite::ToolError((root / kLatest).string(), "does not hold an iteration number");
  const fs::path file = root / iter_dir(it) / kFile;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw suite::ToolError(file.string(), "checkpoint file is missing");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string where = file.string();
  if (bytes.size() < sizeof kMagic + 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw suite::ToolError(where, "not a gpt-train checkpoint (bad magic)");
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (XXH64(bytes.data(), bytes.size() - 8, 0) != stored)
    throw suite::ToolError(where, "checkpoint is corrupt (checksum mismatch)");
  uint64_t hlen;
  std::memcpy(&hlen, bytes.data() + 8, 8);
  if (16 + hlen > bytes.size() - 8) throw suite::ToolError(where, "checkpoint header truncated");
  std::map<std::string, std::string> kv;
  std::istringstream hs(bytes.substr(16, hlen));
  for (std::string line; std::getline(hs, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  auto num = [&](const std::string& key) -> int64_t {
    auto f = kv.find(key);
    if (f == kv.end()) throw suite::ToolError(where, "checkpoint header lacks " + key);
    return std::stoll(f->second);
  };
  Checkpoint c;
  c.model.num_layers = int(num("model.num-layers"));
  c.model.hidden_size = int(num("model.hidden-size"));
  c.model.num_heads = int(num("model.num-attention-heads"));
  c.model.ffn_hidden_size = int(num("model.ffn-hidden-size"));
  c.model.seq_length = int(num("model.seq-length"));
  c.model.max_position_embeddings = int(num("model.max-position-embeddings"));
  c.model.vocab_size = int(num("model.vocab-size"));
  c.model.padded_vocab_size = int(num("model.padded-vocab-size"));
  c.model.init_method_std = std::stof(kv["init-method-std"]);
  c.state.iteration = num("iteration");
  c.state.consumed_train_samples = num("consumed-train-samples");
  c.state.consumed_valid_samples = num("consumed-valid-samples");
  c.state.skipped_iterations = num("skipped-iterations");
  c.state.nan_iterations = num("nan-iterations");
  c.state.adam_step = num("adam-step");
  c.state.seed = uint64_t(std::stoull(kv["seed"]));
  if (kv.count("loss-scale")) {  // absent from checkpoints written before fp16 loss scaling
    c.state.loss_scale = std::stod(kv["loss-scale"]);
    c.state.loss_scale_growth_tracker = num("loss-scale-growth-tracker");
    c.state.loss_scale_hysteresis_tracker = num("loss-scale-hysteresis-tracker");
  }
  c.arguments = kv["arguments"];
  const size_t n = size_t(num("num-params"));
  if (16 + hlen + 3 * n * sizeof(float) + 8 != bytes.size())
    throw suite::ToolError(where, "checkpoint size does not match its header");
  const char* p = bytes.data() + 16 + hlen;
  for (auto* v : {&c.params, &c.adam_m, &c.adam_v}) {
    v->resize(n);
    std::memcpy(v->data(), p, n * sizeof(float));
    p += n * sizeof(float);
  }
  return c;
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
