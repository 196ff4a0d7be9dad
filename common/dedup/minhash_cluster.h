// Clustering: exact groups (equal 128-bit hash of the normalised text), then LSH candidates among
// the first document of each exact group (documents whose band hash is equal in some band), then
// union-find. Within one band bucket (documents sorted by key) every member is paired with the
// bucket's first member, so the candidate pairs, and with --verify the verified ones, are a
// function of the documents alone: the same for in-memory and staged runs, any thread or shard
// count. Each cluster keeps one document: the first (smallest key) or the longest (ties: first).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "common/dedup/band_file.h"
#include "common/dedup/doc_table.h"

namespace suite::dedup {

enum class KeepPolicy { kFirst, kLongest };
enum class Match : uint8_t { kKept = 0, kExact = 1, kNear = 2 };

// A sorted stream of band records (a vector in memory or a band file).
class BandSource {
 public:
  virtual ~BandSource() = default;
  virtual bool next(BandRecord& r) = 0;
};
class VectorBandSource final : public BandSource {
 public:
  explicit VectorBandSource(const std::vector<BandRecord>& v) : v_(v) {}
  bool next(BandRecord& r) override {
    if (i_ == v_.size()) return false;
    r = v_[i_++];
    return true;
  }

 private:
  const std::vector<BandRecord>& v_;
  size_t i_ = 0;
};

// Opens the sorted sources of one band (called once per band, possibly from several threads).
using OpenBand = std::function<std::vector<std::unique_ptr<BandSource>>(uint32_t band)>;
// Given candidate pairs (dense indices, first < second), says which ones to keep (--verify).
using VerifyPairs = std::function<std::vector<bool>(const std::vector<std::pair<uint32_t, uint32_t>>&)>;

struct ClusterOptions {
  bool exact = true;
  bool near = true;
  KeepPolicy keep = KeepPolicy::kFirst;
  int threads = 1;
  VerifyPairs verify;  // empty: every candidate pair is a duplicate
};

struct ClusterResult {
  std::vector<uint32_t> kept_of;  // dense index -> dense index of its cluster's kept document
  std::vector<uint32_t> cluster;  // dense index -> smallest dense index of its cluster
  std::vector<Match> match;
  uint64_t candidate_pairs = 0, verified_pairs = 0, clusters = 0;
  uint64_t exact_docs = 0, exact_bytes = 0, near_docs = 0, near_bytes = 0;
};

ClusterResult cluster_documents(const DocTable& table, uint32_t bands, const OpenBand& open_band,
                                const ClusterOptions& options);

}  // namespace suite::dedup
