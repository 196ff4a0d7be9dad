// The checkpoint format's two primitives (train/model/checkpoint.cpp), shared by the whole-buffer
// functions of checkpoint.h and the per-rank ones of tensor/pipeline-parallel runs
// (checkpoint_layout.cpp): writing pieces of the global flat buffer, and reading any range of it.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "train/model/checkpoint.h"

namespace gpt::ckptio {

// A rank's buffers: params, adam m, adam v (one set per model chunk).
using Source = std::array<const float*, 3>;

// n floats of the global flat buffer at `global`, taken from sources[source] at `local`.
struct Run {
  size_t global = 0, local = 0, n = 0;
  int source = 0;
};

// Every rank calls it: writes shard_<rank>_of_<shards>.bin holding its runs (c gives the header:
// model, state, arguments); once all are written, rank 0 writes index.txt (`tensors`: "name
// shape offset" lines) and marks the checkpoint latest. A rank that fails still reaches the
// barriers (all_ok), and every rank then throws.
void save_runs(const std::string& dir, const Checkpoint& c, size_t num_params,
               const std::vector<Run>& runs, const std::vector<Source>& sources,
               const std::vector<std::string>& tensors, int rank, int shards,
               const AllOk& all_ok);

struct RawFile;  // one mapped file (checkpoint.cpp)

// The latest checkpoint of a directory, every file mapped and checked (magic, checksum, sizes,
// the shards covering each parameter once); ranges are then read without loading the rest.
class Reader {
 public:
  explicit Reader(const std::string& dir);  // throws suite::ToolError
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  // Model shape, state and arguments (buffers empty).
  const Checkpoint& meta() const { return meta_; }
  size_t num_params() const { return n_; }
  // Copies n floats at global offset g of buffer `which` (0 params, 1 adam m, 2 adam v).
  void read(int which, size_t g, size_t n, float* out) const;

 private:
  struct Piece;
  std::string where_;
  Checkpoint meta_;
  size_t n_ = 0;
  std::vector<std::unique_ptr<RawFile>> files_;
  std::vector<Piece> pieces_;
};

}  // namespace gpt::ckptio
