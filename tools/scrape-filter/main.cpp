// scrape-filter: URL rules, HTML main text, text repair, quality rules (Gopher, C4, FineWeb),
// CLD2 language identification and benchmark decontamination over JSONL with `url` and `text`
// (or `html`). The stages live in common/filter/, the JSONL job (document rewriting, exact-duplicate
// URLs in input order, --rejects, the per-rule summary) in common/filter/scrape_filter_job.h; this
// file is the command line.
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/cli/numbers.h"
#include "common/cli/options.h"
#include "common/filter/scrape_filter_job.h"

namespace suite {
namespace {

using filter::ScrapeConfig;

const char* kExample =
    "  # Web text: blocklist, repair, Gopher + C4 + FineWeb rules, English only, rejects kept aside:\n"
    "  scrape-filter -i crawl.jsonl.zst -o clean.jsonl.zst --url-blocklist adult-domains.txt \\\n"
    "      --lang en --lang-threshold 0.5 --rejects rejects.jsonl.zst\n"
    "  # Pages as HTML (main text from the `html` field into `text`), only the Gopher rules:\n"
    "  scrape-filter --html --rules gopher -i pages.jsonl > text.jsonl\n"
    "  # Drop or split documents that share a 13-gram with evaluation sets:\n"
    "  scrape-filter --rules none --decontaminate lambada.jsonl --decontaminate piqa.txt -i in.jsonl > out.jsonl\n"
    "  # A Slurm array over one big file, each task keeping its shard (I/N from the array):\n"
    "  sbatch --array=0-15 --wrap 'scrape-filter --shard slurm -i all.jsonl -o out-$SLURM_ARRAY_TASK_ID.jsonl.zst'";

const char* kDetails =
    "Stages, in order (each switchable): URL rules (--no-url-rules; --url-blocklist, Megatron's file\n"
    "extensions, --min-url-length, malformed URLs, exact-duplicate URLs: first kept copy wins; this\n"
    "is per process, so with --shard a URL repeated in two shards is kept once in each),\n"
    "--html extraction, text repair (--no-repair: mojibake, control characters, line endings and\n"
    "whitespace, NFC), --min-chars/--min-words, --lang (CLD2), the --rules sets (gopher = quality +\n"
    "repetition, c4, fineweb; thresholds default to datatrove's published values; a negative value\n"
    "turns one check off), --decontaminate. The C4 rules keep only their accepted lines in `text`.\n"
    "Kept documents keep every other field byte for byte; `text` is rewritten when a stage changed it,\n"
    "and `lang`, `lang_score` are appended when --lang is given. --rejects gets each dropped document\n"
    "as it came in, plus `rejected_by` (url_duplicate rejects carry the cleaned document). The URL\n"
    "field is required unless --no-url-rules. Exit 1 on bad input (file:line: what), 2 on usage errors.";

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t c = s.find(',', pos);
    if (c == std::string::npos) c = s.size();
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

std::vector<double> parse_doubles(const std::string& s, size_t n, const char* what) {
  std::vector<double> v;
  for (const std::string& x : split_list(s)) {
    const std::optional<double> d = suite::parse_number<double>(x);
    if (!d) throw UsageError(std::string(what) + ": not a number: " + x);
    v.push_back(*d);
  }
  if (v.size() != n) throw UsageError(std::string(what) + ": expected " + std::to_string(n) + " comma-separated values");
  return v;
}

int body(int argc, char** argv) {
  Cli cli({.name = "scrape-filter",
           .summary = "Filter scraped web documents: URL rules, HTML text, repair, quality rules, language, decontamination.",
           .example = kExample,
           .reads_text = false,
           .shards = true,
           .details = kDetails});
  filter::ScrapeFilterConfig s;
  ScrapeConfig& c = s.config;
  auto& gq = c.gopher_quality_config;
  auto& gr = c.gopher_repetition_config;
  auto& c4 = c.c4_config;
  auto& fw = c.fineweb_config;
  std::string rules = "gopher,c4,fineweb", lang, top_ngrams = "0.20,0.18,0.16",
              dup_ngrams = "0.15,0.14,0.13,0.12,0.11,0.10", decontam_mode = "split";
  size_t min_url_length = 9;
  bool no_url_rules = false, no_url_dedup = false, no_ext = false, megatron_domains = false, no_repair = false, c4_no_punct = false;
  cli.options().add_options()
      ("url-key", po::value(&s.url_key)->default_value("url"), "field holding the URL")
      ("text-key", po::value(&s.text_key)->default_value("text"), "field holding (and receiving) the text")
      ("html", po::bool_switch(&c.html), "extract the main text from the HTML page in --html-key into --text-key")
      ("html-key", po::value(&s.html_key)->default_value("html"), "field holding the HTML page")
      ("url-blocklist", po::value(&s.blocklists)->composing(), "domain blocklist file (repeatable; subdomains match)")
      ("min-url-length", ranged(&min_url_length, size_t{0})->default_value(9), "drop URLs shorter than this")
      ("no-url-rules", po::bool_switch(&no_url_rules), "skip the URL rules (blocklist, extension, length, shape)")
      ("megatron-domains", po::bool_switch(&megatron_domains),
       "also drop Megatron's openwebtext domains (111 names: imgur, youtube, reddit, github, ...)")
      ("no-url-extensions", po::bool_switch(&no_ext), "keep URLs ending in Megatron's file extensions")
      ("no-url-dedup", po::bool_switch(&no_url_dedup), "keep documents whose URL was seen before")
      ("no-repair", po::bool_switch(&no_repair), "skip text repair (mojibake, controls, whitespace, NFC)")
      ("rules", po::value(&rules)->default_value(rules), "quality rule sets: gopher, gopher-quality, gopher-repetition, c4, fineweb, all, none")
      ("min-chars", integer(&c.length.min_chars)->default_value(0), "minimum length in characters")
      ("min-words", integer(&c.length.min_words)->default_value(0), "minimum length in words")
      ("gopher-min-words", integer(&gq.min_words)->default_value(gq.min_words), "Gopher: minimum words")
      ("gopher-max-words", integer(&gq.max_words)->default_value(gq.max_words), "Gopher: maximum words")
      ("gopher-min-avg-word-length", real(&gq.min_avg_word_length)->default_value(3), "Gopher: minimum mean word length")
      ("gopher-max-avg-word-length", real(&gq.max_avg_word_length)->default_value(10), "Gopher: maximum mean word length")
      ("gopher-max-symbol-ratio", real(&gq.max_symbol_word_ratio)->default_value(0.1, "0.1"), "Gopher: max '#' and ellipses per word")
      ("gopher-max-bullet-lines", real(&gq.max_bullet_lines_ratio)->default_value(0.9, "0.9"), "Gopher: max share of bullet lines")
      ("gopher-max-ellipsis-lines", real(&gq.max_ellipsis_lines_ratio)->default_value(0.3, "0.3"), "Gopher: max share of lines ending in an ellipsis")
      ("gopher-min-alpha-words", real(&gq.min_alpha_words_ratio)->default_value(0.8, "0.8"), "Gopher: min share of words with a letter")
      ("gopher-min-stop-words", integer(&gq.min_stop_words)->default_value(2), "Gopher: min distinct stop words")
      ("gopher-dup-line-frac", real(&gr.dup_line_frac)->default_value(0.3, "0.3"), "Gopher: max share of duplicate lines")
      ("gopher-dup-para-frac", real(&gr.dup_para_frac)->default_value(0.3, "0.3"), "Gopher: max share of duplicate paragraphs")
      ("gopher-dup-line-char-frac", real(&gr.dup_line_char_frac)->default_value(0.2, "0.2"), "Gopher: max char share of duplicate lines")
      ("gopher-dup-para-char-frac", real(&gr.dup_para_char_frac)->default_value(0.2, "0.2"), "Gopher: max char share of duplicate paragraphs")
      ("gopher-top-ngram-frac", po::value(&top_ngrams)->default_value(top_ngrams), "Gopher: max char share of the top 2,3,4-gram")
      ("gopher-dup-ngram-frac", po::value(&dup_ngrams)->default_value(dup_ngrams), "Gopher: max char share of duplicated 5..10-grams")
      ("c4-min-words-per-line", integer(&c4.min_words_per_line)->default_value(3), "C4: lines with fewer words are removed (TFDS: 5)")
      ("c4-min-sentences", integer(&c4.min_sentences)->default_value(5), "C4: minimum sentences in the kept lines (TFDS: 3)")
      ("c4-max-word-length", integer(&c4.max_word_length)->default_value(1000), "C4: lines with a longer word are removed")
      ("c4-no-terminal-punct", po::bool_switch(&c4_no_punct), "C4: keep lines without terminal punctuation (as FineWeb ran it)")
      ("fineweb-min-line-punct", real(&fw.min_line_punct_ratio)->default_value(0.12, "0.12"), "FineWeb: min share of lines ending in punctuation")
      ("fineweb-short-line-length", integer(&fw.short_line_length)->default_value(30), "FineWeb: a short line has at most this many chars")
      ("fineweb-max-short-lines", real(&fw.max_short_line_ratio)->default_value(0.67, "0.67"), "FineWeb: max share of short lines")
      ("fineweb-max-char-dup", real(&fw.max_char_dup_ratio)->default_value(0.01, "0.01"), "FineWeb: max char share of duplicated lines")
      ("fineweb-max-newline-ratio", real(&fw.max_newline_ratio)->default_value(0.3, "0.3"), "FineWeb: max newlines per word")
      ("lang", po::value(&lang), "keep these CLD2 languages (e.g. en,de; 'any' only records lang and lang_score)")
      ("lang-threshold", real(&c.language.threshold)->default_value(0.5, "0.5"), "minimum share of the text in the language")
      ("decontaminate", po::value(&s.decontaminate)->composing(), "evaluation texts (JSONL `text` or one per line; repeatable)")
      ("decontaminate-ngram", ranged(&s.decontam.ngram, size_t{1}, size_t{1000})->default_value(13), "n-gram length in words")
      ("decontaminate-mode", po::value(&decontam_mode)->default_value("split"), "split (Megatron) or drop")
      ("rejects", po::value(&s.rejects_path), "write dropped documents here, with `rejected_by`");
  CommonOptions options = cli.parse(argc, argv);
  c.url_rules = !no_url_rules;
  c.url_dedup = !no_url_dedup && !no_url_rules;
  c.repair = !no_repair;
  c4.terminal_punct = !c4_no_punct;
  filter::apply_rules_preset(rules, c);
  gr.top_ngram_frac = parse_doubles(top_ngrams, 3, "--gopher-top-ngram-frac");
  gr.dup_ngram_frac = parse_doubles(dup_ngrams, 6, "--gopher-dup-ngram-frac");
  if (!lang.empty()) {
    c.identify_language = true;
    if (lang != "any") c.language.keep = split_list(lang);
  }
  if (decontam_mode != "split" && decontam_mode != "drop")
    throw UsageError("--decontaminate-mode: use split or drop");
  s.decontam.split = decontam_mode == "split";
  s.url_rules = {.check_extension = !no_ext, .megatron_domains = megatron_domains, .min_length = min_url_length};
  filter::run_scrape_filter(options, s);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("scrape-filter", argc, argv, suite::body); }
