// Running gpt-train in-process for tests: argv from strings, a scratch directory.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "train/loop/args.h"
#include "train/loop/trainer.h"

namespace train_test {

inline gpt::TrainArgs parse(std::vector<std::string> words) {
  words.insert(words.begin(), "gpt-train");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  gpt::TrainArgs a;
  gpt::parse_train_args(int(argv.size()), argv.data(), a);
  return a;
}

// A tiny model on a small mock pool; extra flags are appended.
inline std::vector<std::string> tiny_flags(std::vector<std::string> extra = {}) {
  std::vector<std::string> f = {"--num-layers", "1", "--hidden-size", "16", "--num-attention-heads",
                                "2", "--seq-length", "8", "--micro-batch-size", "2",
                                "--global-batch-size", "4", "--lr", "1e-2", "--min-lr", "1e-3",
                                "--lr-decay-style", "cosine", "--lr-warmup-iters", "2",
                                "--mock-data", "--mock-data-samples", "8", "--vocab-size", "40",
                                "--log-interval", "5", "--eval-iters", "0", "--cpu-threads", "2"};
  // An extra flag that is already present replaces its value (argparse's last-wins).
  for (size_t i = 0; i < extra.size(); ++i) {
    const bool has_value = i + 1 < extra.size() && extra[i + 1].rfind("--", 0) != 0;
    auto at = std::find(f.begin(), f.end(), extra[i]);
    if (at != f.end() && has_value) {
      *(at + 1) = extra[++i];
    } else {
      f.push_back(extra[i]);
      if (has_value) f.push_back(extra[++i]);
    }
  }
  return f;
}

inline gpt::TrainResult run(const std::vector<std::string>& flags, std::string* log = nullptr) {
  std::ostringstream out;
  auto r = gpt::run_training(parse(flags), out);
  if (log) *log = out.str();
  return r;
}

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& p) const { return (path / p).string(); }
};

}  // namespace train_test
