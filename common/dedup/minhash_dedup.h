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

struct DedupRun {
  CommonOptions common;
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

void run_one_process(DedupRun& run);
void run_signatures_stage(const DedupRun& run);
void run_cluster_stage(const DedupRun& run);
void run_filter_stage(const DedupRun& run);

}  // namespace suite::dedup
