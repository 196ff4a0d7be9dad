// Everything that decides a document's exact hash and band hashes, and its canonical string
// ("v1 norm=... shingle=word ngram=5 bands=14 rows=8 seed=1 text=text id=id"), which every staged
// file records so that stages run with different options refuse each other's files.
#pragma once

#include <cstdint>
#include <string>

#include "common/dedup/minhash.h"
#include "common/dedup/normalize.h"
#include "common/dedup/shingle.h"

namespace suite::dedup {

struct DedupParams {
  NormalizeOptions norm;
  ShingleOptions shingle;  // shingle.seed is the seed of both shingle hashes and permutations
  BandsRows br;
  std::string text_key = "text";
  std::string id_key = "id";
  std::string describe() const;
};

// Document keys: (input file index, 1-based line) packed as file << 40 | line. Ordering keys is
// ordering documents by (input order, line), whatever the shard or thread that read them.
inline constexpr int kLineBits = 40;
inline uint64_t doc_key(uint32_t file, uint64_t line) { return (uint64_t(file) << kLineBits) | line; }
inline uint32_t key_file(uint64_t key) { return static_cast<uint32_t>(key >> kLineBits); }
inline uint64_t key_line(uint64_t key) { return key & ((uint64_t(1) << kLineBits) - 1); }

}  // namespace suite::dedup
