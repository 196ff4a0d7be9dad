#include "common/dedup/dedup_report.h"

#include <algorithm>

#include "common/cli/error.h"
#include "common/io/output.h"
#include "common/jsonl/json_writer.h"

namespace suite::dedup {

void write_removed(const std::string& path, const DocTable& table, const ClusterResult& res) {
  auto out = open_output(path);
  std::string buf;
  for (size_t i = 0; i < table.size(); ++i) {
    if (res.match[i] == Match::kKept) continue;
    buf += "{\"id\":";
    table.append_id(buf, i);
    buf += ",\"cluster\":";
    table.append_id(buf, res.cluster[i]);
    buf += ",\"duplicate_of\":";
    table.append_id(buf, res.kept_of[i]);
    buf += res.match[i] == Match::kExact ? ",\"match\":\"exact\"}\n" : ",\"match\":\"near\"}\n";
    if (buf.size() > (1 << 20)) {
      out->write(buf);
      buf.clear();
    }
  }
  out->write(buf);
  out->close();
}

void write_clusters(const std::string& path, const DocTable& table, const ClusterResult& res) {
  const size_t n = table.size();
  std::vector<uint32_t> size(n, 0);
  for (size_t i = 0; i < n; ++i) ++size[res.cluster[i]];
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < n; ++i)
    if (size[res.cluster[i]] > 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return res.cluster[a] < res.cluster[b]; });
  auto out = open_output(path);
  std::string buf;
  for (size_t k = 0; k < order.size();) {
    uint32_t c = res.cluster[order[k]];
    buf += "{\"cluster\":";
    table.append_id(buf, c);
    buf += ",\"size\":";
    append_uint(buf, size[c]);
    buf += ",\"kept\":";
    table.append_id(buf, res.kept_of[c]);
    buf += ",\"members\":[";
    for (size_t j = k; j < order.size() && res.cluster[order[j]] == c; ++j) {
      if (j > k) buf += ',';
      table.append_id(buf, order[j]);
    }
    buf += "]}\n";
    k += size[c];
    if (buf.size() > (1 << 20)) {
      out->write(buf);
      buf.clear();
    }
  }
  out->write(buf);
  out->close();
}

void add_cluster_counts(const ClusterResult& res, bool verify, Counters& counts) {
  counts.add("kept", res.match.size() - res.exact_docs - res.near_docs);
  counts.add("removed: exact", res.exact_docs);
  counts.add("removed: near", res.near_docs);
  counts.add("bytes removed: exact", res.exact_bytes);
  counts.add("bytes removed: near", res.near_bytes);
  counts.add("clusters", res.clusters);
  counts.add("candidate pairs", res.candidate_pairs);
  if (verify) counts.add("verified pairs", res.verified_pairs);
}

std::vector<uint64_t> removed_keys(const DocTable& table, const ClusterResult& res) {
  std::vector<uint64_t> keys;
  for (size_t i = 0; i < table.size(); ++i)
    if (res.match[i] != Match::kKept) keys.push_back(table.key(i));
  return keys;  // the table is sorted by key
}

void write_removed_keys(const std::string& path, const std::string& params, uint32_t input_files,
                        const std::vector<uint64_t>& keys) {
  BinaryWriter w(path);
  FileHeader h;
  h.magic = kRemovedMagic;
  h.params = params;
  h.count = keys.size();
  w.header(h);
  w.u32(input_files);
  w.bytes(keys.data(), keys.size() * sizeof(uint64_t));
  w.finish();
}

std::vector<uint64_t> read_removed_keys(const std::string& path, const std::string& params, uint32_t input_files) {
  BinaryReader in(path);
  FileHeader h = in.header(kRemovedMagic, params);
  uint32_t files = in.u32();
  if (files != input_files)
    throw ToolError(path, "the cluster stage saw " + std::to_string(files) + " input files, this run has " +
                              std::to_string(input_files) + " (give every stage the same -i list)");
  std::vector<uint64_t> keys(h.count);
  in.bytes(keys.data(), keys.size() * sizeof(uint64_t));
  return keys;
}

}  // namespace suite::dedup
