// sentence-split: turn each document's text into a JSON array of sentences (ICU sentence breaks
// plus an abbreviation/list/ellipsis rule pass, common/sentences/), the input that
// `jsonl-to-mmap --split-sentences` and `bpe-encode` take for sentence-level datasets. The work is in
// common/sentences/sentence_split_job.h; this file is the command line.
#include <string>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/sentences/sentence_split_job.h"
#include "common/sentences/sentence_splitter.h"

namespace suite {
namespace {

const char* kExample =
    "  # English web text; each document's \"text\" becomes [\"First sentence.\", \"Second one.\", ...]\n"
    "  sentence-split -i clean.jsonl.zst -o sentences.jsonl.zst --threads 8\n"
    "  # ... then one Megatron sequence per sentence:\n"
    "  jsonl-to-mmap -i sentences.jsonl.zst --split-sentences --output-prefix data/web \\\n"
    "      --vocab-file gpt2/vocab.json --merge-file gpt2/merges.txt --append-eod\n"
    "  # Language per document from scrape-filter's \"lang\" field (the default), or forced:\n"
    "  sentence-split --lang de -i de.jsonl > de-sentences.jsonl\n"
    "  # Slurm array of 16 tasks over many files (--shard slurm: I/N from the array):\n"
    "  sbatch --array=0-15 --wrap 'sentence-split --shard slurm $(sed \"s/^/-i /\" files.txt) \\\n"
    "      -o out/s-$SLURM_ARRAY_TASK_ID.jsonl.zst'";

const char* kDetails =
    "Each --json-keys field (default text) is replaced in place by an array of sentence strings; every\n"
    "other field is copied byte for byte. Sentences are ICU's (UAX #29) with a rule pass: ICU's own\n"
    "abbreviation list (CLDR, as with \"@ss=standard\") plus Dr., St., Jr., No., Fig., p., e.g., i.e., etc.,\n"
    "Inc., Co., ...; initials (\"Jonas E. Smith\"); U.S./a.m./P.M. before a sentence starter; \"Yahoo! in\";\n"
    "numbered and lettered lists (\"1.) 2.)\", \"a. b.\"); ellipses (\". . .\", \"[...]\"); emails and URLs.\n"
    "Abbreviation and list rules are English; other languages get ICU's list for that language.";

int body(int argc, char** argv) {
  Cli cli({.name = "sentence-split",
           .summary = "Split each document's text into a JSON array of sentences (ICU + abbreviation, list and "
                      "ellipsis rules).",
           .example = kExample,
           .shards = true,
           .details = kDetails});
  sentences::SentenceSplitConfig job;
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
  sentences::run_sentence_split(options, job);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("sentence-split", argc, argv, suite::body); }
