// The reading passes of minhash-dedup over JSONL inputs (every document's key carries its input
// file index and line), with --threads workers:
//   read_signatures: per document the exact hash of the normalised text and one band hash per
//                    band, into a DocTable and per-band BandRecord vectors (in input order for
//                    any thread count);
//   read_shingle_sets: the shingle sets of the given documents, for --verify.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/cli/options.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/dedup/band_file.h"
#include "common/dedup/dedup_params.h"
#include "common/dedup/doc_table.h"

namespace suite::dedup {

// Reads this shard's part of options.inputs (all of them without --shard); returns the indices of
// the input files it read.
std::vector<uint32_t> read_signatures(const CommonOptions& options, const DedupParams& params, DocTable& table,
                                      std::vector<std::vector<BandRecord>>& bands, JsonlStats& stats);

// Shingle sets (sorted, unique) of the documents whose keys are in `keys` (sorted).
std::unordered_map<uint64_t, std::vector<uint64_t>> read_shingle_sets(const CommonOptions& options,
                                                                      const DedupParams& params,
                                                                      const std::vector<uint64_t>& keys);

// Copies stdin (decompressed) to an unlinked temporary file in `dir` and returns a path that
// reopens it (/proc/self/fd/N, named "<stdin>" in messages), for the second pass. The space is
// freed when the process ends, however it ends.
std::string spill_stdin(const std::string& dir);

}  // namespace suite::dedup
