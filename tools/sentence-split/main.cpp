// sentence-split: turn each document's text into a JSON array of sentences (ICU sentence breaks
// plus an abbreviation/list/ellipsis rule pass, common/sentences/), the input that
// `jsonl-to-mmap --split-sentences` and `bpe-encode` take for sentence-level datasets.
#include <memory>
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/io/output.h"
#include "common/jsonl/json_writer.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/sentences/sentence_splitter.h"

namespace suite {
namespace {

using sentences::SentenceSplitter;
using sentences::Span;
using sentences::SplitOptions;

const char* kExample =
    "  # English web text; each document's \"text\" becomes [\"First sentence.\", \"Second one.\", ...]\n"
    "  sentence-split -i clean.jsonl.zst -o sentences.jsonl.zst --threads 8\n"
    "  # ... then one Megatron sequence per sentence:\n"
    "  jsonl-to-mmap -i sentences.jsonl.zst --split-sentences --output-prefix data/web \\\n"
    "      --vocab-file gpt2/vocab.json --merge-file gpt2/merges.txt --append-eod\n"
    "  # Language per document from scrape-filter's \"lang\" field (the default), or forced:\n"
    "  sentence-split --lang de -i de.jsonl > de-sentences.jsonl\n"
    "  # Slurm array of 16 tasks over many files (shard I/N from SLURM_ARRAY_TASK_ID/COUNT):\n"
    "  sbatch --array=0-15 --wrap 'sentence-split $(sed \"s/^/-i /\" files.txt) -o out/s-$SLURM_ARRAY_TASK_ID.jsonl.zst'";

const char* kDetails =
    "Each --json-keys field (default text) is replaced in place by an array of sentence strings; every\n"
    "other field is copied byte for byte. Sentences are ICU's (UAX #29) with a rule pass: ICU's own\n"
    "abbreviation list (CLDR, as with \"@ss=standard\") plus Dr., St., Jr., No., Fig., p., e.g., i.e., etc.,\n"
    "Inc., Co., ...; initials (\"Jonas E. Smith\"); U.S./a.m./P.M. before a sentence starter; \"Yahoo! in\";\n"
    "numbered and lettered lists (\"1.) 2.)\", \"a. b.\"); ellipses (\". . .\", \"[...]\"); emails and URLs.\n"
    "Abbreviation and list rules are English; other languages get ICU's list for that language.\n"
    "--shard I/N: with at least N input files, file f goes to shard f % N; otherwise each task reads\n"
    "everything and keeps the documents on lines L with L % N == I (1-based line numbers per file).";

struct SplitJob {
  SplitOptions split;
  bool forced_lang = false;
  std::string lang_field = "lang";
  std::vector<std::string> keys;
  Shard line_shard;  // active when sharding by line
};

class SplitWorker final : public DocumentWorker {
 public:
  explicit SplitWorker(const SplitJob& job) : job_(job), splitter_(job.split) {}

  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override {
    if (job_.line_shard.active() && where.line % job_.line_shard.count != job_.line_shard.index) return;
    std::string_view lang;
    if (!job_.forced_lang && !job_.lang_field.empty()) {
      auto el = doc.field(job_.lang_field);
      std::string_view value;
      if (el && !el->get_string().get(value))
        lang = sentences::normalize_language(value);
    }
    // Validate every key before writing anything, so a skipped document leaves no partial line.
    texts_.clear();
    for (const std::string& key : job_.keys) {
      std::optional<std::string_view> text = doc.string_field(key);
      if (!text) throw DocumentError("missing field", "no \"" + key + "\" field");
      texts_.push_back(*text);
    }
    JsonObjectWriter obj(out.text);
    written_.assign(job_.keys.size(), false);
    for (const RawField& f : doc.raw_fields()) {
      size_t k = 0;
      while (k < job_.keys.size() && job_.keys[k] != f.key) ++k;
      if (k == job_.keys.size()) {
        obj.raw_field(f.raw_key, f.raw_value);
        continue;
      }
      if (written_[k]) continue;  // a repeated key: written once, with its last value
      written_[k] = true;
      splitter_.split(texts_[k], spans_, lang);
      array_.clear();
      array_ += '[';
      for (size_t i = 0; i < spans_.size(); ++i) {
        if (i) array_ += ',';
        append_json_string(array_, texts_[k].substr(spans_[i].begin, spans_[i].end - spans_[i].begin));
      }
      array_ += ']';
      obj.raw_field(f.raw_key, array_);
      out.counts.add("sentences", spans_.size());
    }
    obj.end_line();
    out.counts.add("kept");
  }

 private:
  const SplitJob& job_;
  SentenceSplitter splitter_;
  std::vector<std::string_view> texts_;
  std::vector<bool> written_;
  std::vector<Span> spans_;
  std::string array_;
};

int body(int argc, char** argv) {
  Cli cli({.name = "sentence-split",
           .summary = "Split each document's text into a JSON array of sentences (ICU + abbreviation, list and "
                      "ellipsis rules).",
           .example = kExample,
           .shards = true,
           .details = kDetails});
  SplitJob job;
  std::string lang, newlines = "line";
  cli.options().add_options()
      ("lang", po::value(&lang), "language of every document (ICU locale id: en, de, fr, ...); default: the "
                                 "document's --lang-field, else en")
      ("lang-field", po::value(&job.lang_field)->default_value(job.lang_field),
       "field holding a document's detected language (scrape-filter writes \"lang\"); \"\" to ignore")
      ("newlines", po::value(&newlines)->default_value(newlines),
       "line: every newline ends a sentence; paragraph: only a blank line, or a newline after . ! ?")
      ("keep-whitespace", po::bool_switch(&job.split.keep_whitespace),
       "keep the white space after each sentence (the sentences concatenate to the original text)")
      ("icu-only", po::bool_switch(&job.split.icu_only),
       "plain ICU (with its \"ss=standard\" abbreviations), no rule pass: for comparison");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);
  if (newlines == "line") job.split.newlines = sentences::NewlineMode::kLine;
  else if (newlines == "paragraph") job.split.newlines = sentences::NewlineMode::kParagraph;
  else throw UsageError("--newlines must be line or paragraph");
  if (cli.has("lang")) {
    std::string_view code = sentences::normalize_language(lang);
    if (code.empty()) throw UsageError("--lang: not a language code: '" + lang + "'");
    job.split.lang = std::string(code);
    job.forced_lang = true;
  }
  job.keys = options.json_keys;
  if (options.shard.active()) {
    if (options.inputs.size() >= options.shard.count) {
      std::vector<std::string> mine;
      for (size_t f = 0; f < options.inputs.size(); ++f)
        if (f % options.shard.count == options.shard.index) mine.push_back(options.inputs[f]);
      options.inputs = std::move(mine);
    } else {
      job.line_shard = options.shard;
    }
  }
  SentenceSplitter(job.split).split_strings("x");  // ICU trouble shows before any input is read
  auto out = open_output(options.output);
  run_jsonl(options, [&job] { return std::make_unique<SplitWorker>(job); }, write_to(*out));
  out->close();
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("sentence-split", argc, argv, suite::body); }
