#include "common/dedup/minhash_dedup_job.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <unordered_set>

#include "common/cli/error.h"
#include "common/io/output.h"
#include "common/jsonl/document_error.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/progress/progress.h"
#include "common/dedup/dedup_report.h"
#include "common/dedup/doc_table.h"
#include "common/dedup/minhash_signatures.h"
#include "common/dedup/shingle.h"

namespace fs = std::filesystem;

namespace suite::dedup {
namespace {

// A stage's view: the tool's configuration and the common options.
struct DedupRun : MinhashDedupConfig {
  CommonOptions common;
};

// Writes the lines of documents whose key is not in `removed` (sorted). A document without a text
// string was skipped by the signature pass (--on-error skip|replace) and is skipped here alike.
class FilterWorker final : public DocumentWorker {
 public:
  FilterWorker(const std::vector<uint64_t>& removed, const std::string& text_key)
      : removed_(removed), text_key_(text_key) {}
  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override {
    if (!doc.string_field(text_key_)) throw DocumentError("missing field", "no \"" + text_key_ + "\" field");
    if (std::binary_search(removed_.begin(), removed_.end(), doc_key(where.input, where.line))) {
      out.counts.add("removed");
      return;
    }
    out.counts.add("kept");
    out.text += doc.line();
    out.text += '\n';
  }

 private:
  const std::vector<uint64_t>& removed_;
  const std::string& text_key_;
};

// Writes this shard's part of the inputs (all of them without --shard).
JsonlStats filter_inputs(const CommonOptions& options, const std::vector<uint64_t>& removed,
                         const std::string& text_key, Output& out) {
  JsonlRunOptions run;
  run.print_summary = false;
  CommonOptions o = options;
  if (o.on_error == OnError::kFail) o.on_error = OnError::kSkip;  // the first pass already checked every line
  return run_jsonl(o, [&] { return std::make_unique<FilterWorker>(removed, text_key); }, write_to(out), run);
}

// An upper bound of the memory one document's shingle set takes, from its JSON line length: at
// most one shingle per byte (characters) or per two bytes (words), 8 bytes each, plus the map node.
uint64_t shingle_set_bytes(uint64_t line_length, ShingleKind kind) {
  const uint64_t shingles = kind == ShingleKind::kChar ? line_length : line_length / 2 + 1;
  return 8 * shingles + 64;
}

VerifyPairs make_verify(const DedupRun& run, const DocTable& table) {
  if (run.verify < 0) return {};
  return [&run, &table](const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
    std::vector<bool> ok(pairs.size());
    static const std::vector<uint64_t> kEmpty;
    size_t rounds = 0, docs = 0;
    // Rounds of consecutive pairs whose documents' shingle sets fit --verify-memory (at least one
    // pair per round, whatever its size).
    for (size_t begin = 0; begin < pairs.size(); ++rounds) {
      std::unordered_set<uint32_t> members;
      uint64_t bytes = 0;
      size_t end = begin;
      for (; end < pairs.size(); ++end) {
        uint64_t add = 0;
        for (uint32_t d : {pairs[end].first, pairs[end].second})
          if (!members.count(d)) add += shingle_set_bytes(table.length(d), run.params.shingle.kind);
        if (end > begin && bytes + add > run.verify_memory_bytes) break;
        bytes += add;
        members.insert(pairs[end].first);
        members.insert(pairs[end].second);
      }
      std::vector<uint64_t> keys;
      for (uint32_t d : members) keys.push_back(table.key(d));
      std::sort(keys.begin(), keys.end());
      docs += keys.size();
      auto sets = read_shingle_sets(run.common, run.params, keys);
      for (size_t i = begin; i < end; ++i) {
        auto ia = sets.find(table.key(pairs[i].first)), ib = sets.find(table.key(pairs[i].second));
        const auto& sa = ia == sets.end() ? kEmpty : ia->second;
        const auto& sb = ib == sets.end() ? kEmpty : ib->second;
        ok[i] = jaccard(sa, sb) >= run.verify;
      }
      begin = end;
    }
    if (rounds > 1 && !run.common.quiet)
      std::cerr << tool_name() << ": --verify: " << pairs.size() << " candidate pairs verified in "
                << rounds << " rounds (" << docs << " document reads) to stay within --verify-memory\n";
    return ok;
  };
}

ClusterOptions cluster_options(const DedupRun& run, const DocTable& table) {
  ClusterOptions c;
  c.exact = run.exact;
  c.near = run.near;
  c.keep = run.keep;
  c.threads = run.common.threads;
  c.verify = make_verify(run, table);
  return c;
}

void log_curve(const DedupRun& run) {
  if (!run.common.quiet && run.near) std::cerr << tool_name() << ": " << describe_s_curve(run.params.br) << "\n";
}

void write_reports(const DedupRun& run, const DocTable& table, const ClusterResult& res) {
  if (!run.removed_path.empty()) write_removed(run.removed_path, table, res);
  if (!run.clusters_path.empty()) write_clusters(run.clusters_path, table, res);
}

std::string docs_path(const std::string& dir, uint32_t shard, uint32_t shards) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "/docs/shard-%05u-of-%05u.bin", shard, shards);
  return dir + buf;
}

void require_files(const CommonOptions& c, const char* stage) {
  if (c.inputs.empty() || (c.inputs.size() == 1 && (c.inputs[0] == "-" || c.inputs[0].empty())))
    throw UsageError(std::string("--stage ") + stage + " needs input files (-i), read by every stage in the same order");
}

// The outputs are opened after the reading passes: check their paths before any work.
void check_outputs(const DedupRun& run) {
  check_output_path(run.common.output);
  if (!run.removed_path.empty()) check_output_path(run.removed_path, "--removed");
  if (!run.clusters_path.empty()) check_output_path(run.clusters_path, "--clusters");
}

void run_one_process(DedupRun& run) {
  CommonOptions& c = run.common;
  check_outputs(run);
  if (c.inputs.empty() || (c.inputs.size() == 1 && (c.inputs[0] == "-" || c.inputs[0].empty())))
    c.inputs = {spill_stdin(run.tmp_dir)};
  for (const auto& p : c.inputs)
    if (p == "-" || p.empty()) throw UsageError("stdin can only be the only input");
  log_curve(run);
  Progress progress(c.quiet);
  DocTable table;
  std::vector<std::vector<BandRecord>> bands;
  JsonlStats stats;
  read_signatures(c, run.params, table, bands, stats);
  table.compute_offsets();
  for (auto& b : bands) std::sort(b.begin(), b.end());
  ClusterResult res = cluster_documents(
      table, static_cast<uint32_t>(bands.size()),
      [&](uint32_t b) {
        std::vector<std::unique_ptr<BandSource>> v;
        v.push_back(std::make_unique<VectorBandSource>(bands[b]));
        return v;
      },
      cluster_options(run, table));
  std::vector<std::vector<BandRecord>>().swap(bands);
  std::vector<uint64_t> removed = removed_keys(table, res);
  auto out = open_output(c.output);
  filter_inputs(c, removed, run.params.text_key, *out);
  out->close();
  write_reports(run, table, res);
  add_cluster_counts(res, run.verify >= 0, stats.counts);
  progress.summary(stats.documents, stats.bytes, stats.counts);
}

void run_signatures_stage(const DedupRun& run) {
  const CommonOptions& c = run.common;
  require_files(c, "signatures");
  if (run.work_dir.empty()) throw UsageError("--stage signatures needs --work-dir");
  const uint32_t shard = c.shard.index, shards = c.shard.count;
  if (shard == 0) log_curve(run);
  Progress progress(c.quiet);
  DocTable table;
  std::vector<std::vector<BandRecord>> bands;
  JsonlStats stats;
  std::vector<uint32_t> files = read_signatures(c, run.params, table, bands, stats);
  const std::string params = run.params.describe();
  fs::create_directories(run.work_dir + "/docs");
  for (uint32_t b = 0; b < bands.size(); ++b) {
    std::sort(bands[b].begin(), bands[b].end());
    std::string path = band_file_path(run.work_dir, b, shard, shards);
    fs::create_directories(fs::path(path).parent_path());
    FileHeader h{kBandMagic, params, b, shard, shards, bands[b].size()};
    write_band_file(path, h, bands[b]);
    std::vector<BandRecord>().swap(bands[b]);
  }
  FileHeader h{kDocsMagic, params, 0, shard, shards, 0};
  table.write(docs_path(run.work_dir, shard, shards), h, files);
  stats.counts.add("input files", files.size());
  progress.summary(stats.documents, stats.bytes, stats.counts);
}

void run_cluster_stage(const DedupRun& run) {
  if (run.work_dir.empty()) throw UsageError("--stage cluster needs --work-dir");
  check_outputs(run);
  const std::string params = run.params.describe();
  // Find the shard count from the docs files; every shard must be there.
  uint32_t shards = 0;
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run.work_dir + "/docs", ec)) {
    unsigned s, n;
    if (std::sscanf(e.path().filename().c_str(), "shard-%05u-of-%05u.bin", &s, &n) == 2) {
      if (shards && n != shards)
        throw ToolError(run.work_dir, "docs files from runs with different shard counts (" + std::to_string(n) +
                                          " and " + std::to_string(shards) + "); use a fresh --work-dir");
      shards = n;
    }
  }
  if (ec || shards == 0) throw ToolError(run.work_dir, "no signature files (run --stage signatures first)");
  log_curve(run);
  Progress progress(run.common.quiet);
  DocTable table;
  uint32_t input_files = 0;
  for (uint32_t s = 0; s < shards; ++s) {
    std::string path = docs_path(run.work_dir, s, shards);
    if (!fs::exists(path)) throw ToolError(path, "missing: shard " + std::to_string(s) + " of the signatures stage did not finish");
    table.load(path, params, nullptr);
  }
  table.sort_by_key();
  input_files = static_cast<uint32_t>(table.files().size());
  table.compute_offsets();
  // --verify re-reads the inputs; they must be the ones the signatures stage read.
  DedupRun r = run;
  if (run.verify >= 0) {
    require_files(run.common, "cluster --verify");
    if (r.common.inputs.size() != input_files)
      throw UsageError("--verify: give the cluster stage the same " + std::to_string(input_files) +
                       " input files as the signatures stage");
  }
  ClusterResult res = cluster_documents(
      table, static_cast<uint32_t>(run.params.br.bands),
      [&](uint32_t b) {
        std::vector<std::unique_ptr<BandSource>> v;
        for (uint32_t s = 0; s < shards; ++s) {
          struct FileSource final : BandSource {
            FileSource(const std::string& p, const std::string& params, uint32_t b) : reader(p, params, b) {}
            bool next(BandRecord& rec) override { return reader.next(rec); }
            BandFileReader reader;
          };
          v.push_back(std::make_unique<FileSource>(band_file_path(run.work_dir, b, s, shards), params, b));
        }
        return v;
      },
      cluster_options(r, table));
  write_removed_keys(run.work_dir + "/removed.bin", params, input_files, removed_keys(table, res));
  write_reports(run, table, res);
  JsonlStats stats;
  for (size_t i = 0; i < table.size(); ++i) stats.bytes += table.length(i);
  stats.documents = table.size();
  add_cluster_counts(res, run.verify >= 0, stats.counts);
  progress.summary(stats.documents, stats.bytes, stats.counts);
}

void run_filter_stage(const DedupRun& run) {
  const CommonOptions& c = run.common;
  require_files(c, "filter");
  if (run.work_dir.empty()) throw UsageError("--stage filter needs --work-dir");
  Progress progress(c.quiet);
  std::vector<uint64_t> removed = read_removed_keys(run.work_dir + "/removed.bin", run.params.describe(),
                                                    static_cast<uint32_t>(c.inputs.size()));
  auto out = open_output(c.output);
  JsonlStats stats = filter_inputs(c, removed, run.params.text_key, *out);
  out->close();
  progress.summary(stats.documents, stats.bytes, stats.counts);
}

}  // namespace

void run_minhash_dedup(const CommonOptions& options, const MinhashDedupConfig& config) {
  const std::string& stage = config.stage;
  if (stage != "all" && stage != "signatures" && stage != "cluster" && stage != "filter")
    throw UsageError("--stage must be all, signatures, cluster or filter");
  if (options.shard.active() && stage != "signatures" && stage != "filter")
    throw UsageError("--shard goes with --stage signatures or filter (the stages that run as array tasks)");
  DedupRun run;
  static_cast<MinhashDedupConfig&>(run) = config;
  run.common = options;
  if (stage == "all") run_one_process(run);
  else if (stage == "signatures") run_signatures_stage(run);
  else if (stage == "cluster") run_cluster_stage(run);
  else run_filter_stage(run);
}

}  // namespace suite::dedup
