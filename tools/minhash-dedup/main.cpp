// minhash-dedup: exact and MinHash-LSH near-duplicate removal for JSONL corpora, in one process
// or in Slurm-array stages (signatures -> cluster -> filter). The work is in
// common/dedup/minhash_dedup_job.h; this file is the command line.
#include <cstdlib>
#include <iostream>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/dedup/minhash_dedup_job.h"

namespace suite {
namespace {

const char* kExample =
    "  # One process: keep one document per near-duplicate cluster (word 5-grams, 14x8 bands).\n"
    "  minhash-dedup -i crawl-00.jsonl.zst -i crawl-01.jsonl.zst -o dedup.jsonl.zst \\\n"
    "      --removed removed.jsonl --clusters clusters.jsonl\n"
    "  # Bands and rows from a threshold, and exact Jaccard verification of candidates:\n"
    "  minhash-dedup --threshold 0.8 --num-perm 128 --verify 0.8 -i in.jsonl > out.jsonl\n"
    "\n"
    "  # Staged, any size, as three Slurm array jobs (every stage gets the same -i list and options):\n"
    "  # (scripts/sbatch/dedup.sbatch is a complete one; array stages pass --shard slurm)\n"
    "  #   dedup.sh:  minhash-dedup --stage \"$1\" ${SLURM_ARRAY_TASK_COUNT:+--shard slurm} \\\n"
    "  #              --work-dir /scratch/md $(sed 's/^/-i /' files.txt) \\\n"
    "  #              -o out/kept-${SLURM_ARRAY_TASK_ID:-0}.jsonl.zst --removed removed.jsonl\n"
    "  sig=$(sbatch --parsable --array=0-63 dedup.sh signatures)   # shard I/64 of the array\n"
    "  clu=$(sbatch --parsable -c 16 --dependency=afterok:$sig dedup.sh cluster)\n"
    "  sbatch --array=0-63 --dependency=afterok:$clu dedup.sh filter\n"
    "  # Shard I/N takes the input files f with f % N == I; a document is (input file index, line),\n"
    "  # so the kept set is the same for any shard or thread count and equals the one-process result.";

const char* kDetails =
    "Normalisation (--normalize, any of lowercase,nfkc,punct,space,digits, or none) applies to both the\n"
    "exact hash (XXH3-128 of the normalised text) and the shingles. Documents with fewer than N words\n"
    "(chars) get no signature and are removed only as exact duplicates. Kept documents are written\n"
    "byte for byte in input order (one process) or per shard (--stage filter).\n"
    "Memory (one process and the signatures stage): about 40 bytes + the id's length + 16 bytes per band\n"
    "per document (264 bytes at 14 bands with short ids), never the text; --verify also holds the shingle\n"
    "sets (8 bytes per shingle) of documents in candidate pairs, at most --verify-memory MB at a time\n"
    "(further candidates are verified in rounds that re-read the inputs). The cluster stage holds the 40 bytes\n"
    "+ id per document and streams the band files. Stdin is spilled to a temporary file ($TMPDIR).";

int body(int argc, char** argv) {
  Cli cli({.name = "minhash-dedup",
           .summary = "Remove exact and near-duplicate JSONL documents (MinHash LSH), in one process or in stages.",
           .example = kExample,
           .shards = true,
           .details = kDetails});
  std::string shingle = "word", keep = "first", normalize = "lowercase,nfkc,punct,space,digits";
  int ngram = 5, bands = 14, rows = 8, num_perm = 112;
  uint64_t seed = 1;
  double threshold = -1, verify = -1;
  uint64_t verify_memory_mb = 2048;
  dedup::MinhashDedupConfig run;
  cli.options().add_options()
      ("stage", po::value(&run.stage)->default_value(run.stage), "all (one process) | signatures | cluster | filter")
      ("work-dir", po::value(&run.work_dir), "directory of the staged files (shared by all stages)")
      ("ngram", ranged(&ngram, 1, 1000)->default_value(ngram), "shingle length N")
      ("shingle", po::value(&shingle)->default_value(shingle), "word | char n-grams")
      ("bands", ranged(&bands, 1, 4096)->default_value(bands), "LSH bands B")
      ("rows", ranged(&rows, 1, 4096)->default_value(rows), "rows R per band (B x R permutations)")
      ("threshold", ranged(&threshold, 0.01, 0.99), "choose B x R for this Jaccard threshold (instead of --bands/--rows)")
      ("num-perm", ranged(&num_perm, 1, 4096)->default_value(num_perm), "permutation budget for --threshold")
      ("seed", ranged(&seed, uint64_t{0})->default_value(seed), "seed of the shingle hashes and permutations")
      ("normalize", po::value(&normalize)->default_value(normalize), "normalisation steps, or none")
      ("no-exact", po::bool_switch(), "skip exact (normalised-text) deduplication")
      ("no-near", po::bool_switch(), "skip MinHash near-duplicate detection")
      ("verify", ranged(&verify, 0.0, 1.0), "keep only candidate pairs whose exact shingle Jaccard is >= J")
      ("verify-memory", ranged(&verify_memory_mb, uint64_t{1}, uint64_t{1} << 30)->default_value(verify_memory_mb),
       "MB of shingle sets --verify holds at once; more candidates are verified in rounds")
      ("keep", po::value(&keep)->default_value(keep), "first | longest document of each cluster")
      ("id-key", po::value(&run.params.id_key)->default_value("id"), "id field for the reports (else the global index)")
      ("removed", po::value(&run.removed_path), "JSONL report of removed documents")
      ("clusters", po::value(&run.clusters_path), "JSONL report of clusters");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);
  if (cli.has("threshold")) {
    if (cli.has("bands") || cli.has("rows")) throw UsageError("give either --threshold or --bands/--rows");
    run.params.br = dedup::choose_bands_rows(threshold, num_perm);
  } else {
    if (bands * rows > 4096) throw UsageError("--bands x --rows must be at most 4096");
    run.params.br = {bands, rows};
  }
  run.verify = cli.has("verify") ? verify : -1;
  run.verify_memory_bytes = verify_memory_mb << 20;
  run.params.norm = dedup::NormalizeOptions::parse(normalize);
  run.params.shingle = {dedup::parse_shingle_kind(shingle), ngram, seed};
  run.params.text_key = options.json_keys.at(0);
  run.exact = !cli.vm()["no-exact"].as<bool>();
  run.near = !cli.vm()["no-near"].as<bool>();
  if (keep == "first") run.keep = dedup::KeepPolicy::kFirst;
  else if (keep == "longest") run.keep = dedup::KeepPolicy::kLongest;
  else throw UsageError("--keep must be first or longest");
  if (const char* t = std::getenv("TMPDIR"); t && *t) run.tmp_dir = t;
  dedup::run_minhash_dedup(options, run);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("minhash-dedup", argc, argv, suite::body); }
