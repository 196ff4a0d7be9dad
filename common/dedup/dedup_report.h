// minhash-dedup's reports: --removed (one JSON line per removed document, in input order:
// {"id":...,"cluster":...,"duplicate_of":...,"match":"exact"|"near"}), --clusters (one line per
// cluster of two or more documents, ordered by cluster: {"cluster":...,"size":n,"kept":...,
// "members":[...]}), where ids are the --id-key field's JSON value, else the global document index,
// and a cluster is named by the id of its first document; plus the summary counters.
#pragma once

#include <string>
#include <vector>

#include "common/progress/counters.h"
#include "common/dedup/doc_table.h"
#include "common/dedup/minhash_cluster.h"

namespace suite::dedup {

void write_removed(const std::string& path, const DocTable& table, const ClusterResult& res);
void write_clusters(const std::string& path, const DocTable& table, const ClusterResult& res);
// "kept", "removed: exact", "removed: near", bytes, clusters, candidate pairs.
void add_cluster_counts(const ClusterResult& res, bool verify, Counters& counts);

// The removed documents' keys (sorted), for the filter stage: <work-dir>/removed.bin.
std::vector<uint64_t> removed_keys(const DocTable& table, const ClusterResult& res);
void write_removed_keys(const std::string& path, const std::string& params, uint32_t input_files,
                        const std::vector<uint64_t>& keys);
std::vector<uint64_t> read_removed_keys(const std::string& path, const std::string& params, uint32_t input_files);

}  // namespace suite::dedup
