// minhash-dedup's modes, on top of the pieces in common/dedup:
//   one process  (--stage all): read signatures of every input into memory (doc_table.h gives the
//                bytes per document), cluster, then a second pass over the inputs writes the kept
//                documents byte for byte (stdin is first spilled to a temporary file);
//   --stage signatures: shard I/N reads its part of the inputs (ShardPlan) and writes
//                <work-dir>/docs/shard-I-of-N.bin and one sorted band file per band;
//   --stage cluster: merges the band files band by band (in parallel), clusters, writes
//                <work-dir>/removed.bin and the reports;
//   --stage filter: shard I/N writes the kept documents of its part of the inputs.
// Both modes share cluster_documents(), so they keep the same documents.
#pragma once

#include <string>

#include "common/cli/options.h"
#include "common/dedup/dedup_params.h"
#include "common/dedup/minhash_cluster.h"

namespace suite::dedup {

struct MinhashDedupConfig {
  std::string stage = "all";  // all | signatures | cluster | filter
  DedupParams params;
  bool exact = true;
  bool near = true;
  KeepPolicy keep = KeepPolicy::kFirst;
  double verify = -1;  // < 0: off
  // --verify-memory: the shingle sets held at once (estimated from line lengths); candidate pairs
  // beyond it are verified in further rounds, each re-reading the inputs.
  uint64_t verify_memory_bytes = uint64_t(2048) << 20;
  std::string removed_path, clusters_path;
  std::string work_dir;
  std::string tmp_dir = "/tmp";
};

// Runs config.stage; throws UsageError for an unknown stage or a --shard outside the array stages.
void run_minhash_dedup(const CommonOptions& options, const MinhashDedupConfig& config);

}  // namespace suite::dedup
