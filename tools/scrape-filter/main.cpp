// scrape-filter: URL rules, HTML main text, text repair, quality rules (Gopher, C4, FineWeb),
// CLD2 language identification and benchmark decontamination over JSONL with `url` and `text`
// (or `html`). The stages live in common/filter/; this file is the command line, the JSON
// rewriting, exact-duplicate URLs (in input order), --rejects and the per-rule summary.
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/filter/scrape_filter.h"
#include "common/io/output.h"
#include "common/jsonl/json_writer.h"
#include "common/jsonl/jsonl_runner.h"

namespace suite {
namespace {

using filter::FilterResult;
using filter::ScrapeConfig;
using filter::ScrapeFilter;

const char* kExample =
    "  # Web text: blocklist, repair, Gopher + C4 + FineWeb rules, English only, rejects kept aside:\n"
    "  scrape-filter -i crawl.jsonl.zst -o clean.jsonl.zst --url-blocklist adult-domains.txt \\\n"
    "      --lang en --lang-threshold 0.5 --rejects rejects.jsonl.zst\n"
    "  # Pages as HTML (main text from the `html` field into `text`), only the Gopher rules:\n"
    "  scrape-filter --html --rules gopher -i pages.jsonl > text.jsonl\n"
    "  # Drop or split documents that share a 13-gram with evaluation sets:\n"
    "  scrape-filter --rules none --decontaminate lambada.jsonl --decontaminate piqa.txt -i in.jsonl > out.jsonl\n"
    "  # A Slurm array: shard I/N (from SLURM_ARRAY_TASK_ID/COUNT) keeps the lines with (line-1) % N == I\n"
    "  sbatch --array=0-15 --wrap 'scrape-filter -i all.jsonl -o out-$SLURM_ARRAY_TASK_ID.jsonl.zst'";

const char* kDetails =
    "Stages, in order (each switchable): URL rules (--no-url-rules; --url-blocklist, Megatron's file\n"
    "extensions, --min-url-length, malformed URLs, exact-duplicate URLs: first kept copy wins),\n"
    "--html extraction, text repair (--no-repair: mojibake, control characters, line endings and\n"
    "whitespace, NFC), --min-chars/--min-words, --lang (CLD2), the --rules sets (gopher = quality +\n"
    "repetition, c4, fineweb; thresholds default to datatrove's published values; a negative value\n"
    "turns one check off), --decontaminate. The C4 rules keep only their accepted lines in `text`.\n"
    "Kept documents keep every other field byte for byte; `text` is rewritten when a stage changed it,\n"
    "and `lang`, `lang_score` are appended when --lang is given. --rejects gets each dropped document\n"
    "as it came in, plus `rejected_by` (url_duplicate rejects carry the cleaned document). The URL\n"
    "field is required unless --no-url-rules. Exit 1 on bad input (file:line: what), 2 on usage errors.";

// One input document's result in the chunk payload, consumed in input order:
//   u8 kept, u64 url hash (0: none), u32 input bytes, u16 rule length, rule, u32 body length, body.
void put_record(std::string& p, bool kept, uint64_t url_hash, uint32_t in_bytes, std::string_view rule,
                std::string_view body) {
  p += char(kept);
  p.append(reinterpret_cast<const char*>(&url_hash), 8);
  p.append(reinterpret_cast<const char*>(&in_bytes), 4);
  uint16_t rl = uint16_t(rule.size());
  p.append(reinterpret_cast<const char*>(&rl), 2);
  p.append(rule);
  uint32_t bl = uint32_t(body.size());
  p.append(reinterpret_cast<const char*>(&bl), 4);
  p.append(body);
}

struct Settings {
  ScrapeConfig config;
  std::string url_key = "url", text_key = "text", html_key = "html";
  bool rejects = false;
  Shard shard;
};

class FilterWorker final : public DocumentWorker {
 public:
  FilterWorker(const Settings& s, const filter::UrlRules* url_rules, const filter::Decontaminator* decontam)
      : s_(s), filter_(s.config, url_rules, decontam) {}

  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override {
    if (s_.shard.active() && (where.line - 1) % s_.shard.count != s_.shard.index) {
      out.counts.add("other shard");
      return;
    }
    const uint32_t in_bytes = uint32_t(std::min<size_t>(doc.line().size() + 1, UINT32_MAX));
    auto url = doc.string_field(s_.url_key);
    if (!url && s_.config.url_rules) throw DocumentError("missing url", "no \"" + s_.url_key + "\" field");
    const std::string& input_key = s_.config.html ? s_.html_key : s_.text_key;
    auto input = doc.string_field(input_key);
    if (!input) throw DocumentError("missing " + input_key, "no \"" + input_key + "\" field");

    const char* rule = url ? filter_.check_url(*url) : nullptr;
    if (!rule) {
      filter_.run(*input, result_);
      rule = result_.rule;
    }
    if (rule) {
      reject(doc, rule, in_bytes, out);
      return;
    }
    const uint64_t url_hash = s_.config.url_dedup && url ? (XXH3_64bits(url->data(), url->size()) | 1) : 0;
    body_.clear();
    if (result_.pieces.empty()) {
      write_doc(doc, result_.text, result_.text_changed, body_);
    } else {
      for (std::string_view piece : result_.pieces) write_doc(doc, piece, true, body_);
      out.counts.add("split pieces", result_.pieces.size());
    }
    put_record(out.payload, true, url_hash, in_bytes, {}, body_);
  }

 private:
  void reject(JsonLine& doc, const char* rule, uint32_t in_bytes, ChunkOutput& out) {
    std::string name = std::string("dropped: ") + rule;
    out.counts.add(name);
    out.counts.add("bytes " + name, in_bytes);
    body_.clear();
    if (s_.rejects) {
      std::string_view line = doc.line();
      size_t close = line.rfind('}');
      body_.append(line.substr(0, close));
      bool empty = line.find_first_not_of(" \t\r\n", line.find('{') + 1) == close;
      body_ += empty ? "\"rejected_by\":" : ",\"rejected_by\":";
      append_json_string(body_, rule);
      body_ += "}\n";
    }
    put_record(out.payload, false, 0, in_bytes, rule, body_);
  }

  // The document with `text` (when changed) and the language fields; other fields byte for byte.
  void write_doc(JsonLine& doc, std::string_view text, bool changed, std::string& out) {
    const bool lang = result_.language.has_value();
    if (!changed && !lang) {
      out.append(doc.line());
      out += '\n';
      return;
    }
    JsonObjectWriter obj(out);
    bool text_done = false, lang_done = false, score_done = false;
    for (const RawField& f : doc.raw_fields()) {
      if (f.key == s_.text_key) {
        obj.string_field(s_.text_key, text);
        text_done = true;
      } else if (lang && f.key == "lang") {
        obj.string_field("lang", result_.language->code);
        lang_done = true;
      } else if (lang && f.key == "lang_score") {
        append_score(obj);
        score_done = true;
      } else {
        obj.raw_field(f.raw_key, f.raw_value);
      }
    }
    if (!text_done) obj.string_field(s_.text_key, text);
    if (lang && !lang_done) obj.string_field("lang", result_.language->code);
    if (lang && !score_done) append_score(obj);
    obj.end_line();
  }

  void append_score(JsonObjectWriter& obj) {
    char buf[32];
    int n = std::snprintf(buf, sizeof buf, "%.2f", result_.language->score);
    obj.json_field("lang_score", std::string_view(buf, size_t(n)));
  }

  const Settings& s_;
  ScrapeFilter filter_;
  FilterResult result_;
  std::string body_;
};

// Exact-duplicate URLs and output, in input order.
class Consumer {
 public:
  Consumer(Output& out, Output* rejects, bool dedup) : out_(out), rejects_(rejects), dedup_(dedup) {}
  void operator()(ChunkOutput& chunk) {
    std::string_view p = chunk.payload;
    size_t i = 0;
    while (i < p.size()) {
      bool kept = p[i] != 0;
      uint64_t hash;
      uint32_t in_bytes, body_len;
      uint16_t rule_len;
      std::memcpy(&hash, p.data() + i + 1, 8);
      std::memcpy(&in_bytes, p.data() + i + 9, 4);
      std::memcpy(&rule_len, p.data() + i + 13, 2);
      i += 15 + rule_len;
      std::memcpy(&body_len, p.data() + i, 4);
      std::string_view body = p.substr(i + 4, body_len);
      i += 4 + body_len;
      if (!kept) {
        if (rejects_) rejects_->write(body);
        continue;
      }
      if (dedup_ && hash && !seen_.insert(hash).second) {
        chunk.counts.add("dropped: url_duplicate");
        chunk.counts.add("bytes dropped: url_duplicate", in_bytes);
        if (rejects_) {
          // The first line of the body, tagged.
          std::string_view line = body.substr(0, body.find('\n'));
          std::string tagged(line.substr(0, line.rfind('}')));
          tagged += ",\"rejected_by\":\"url_duplicate\"}\n";
          rejects_->write(tagged);
        }
        continue;
      }
      chunk.counts.add("kept");
      chunk.counts.add("bytes kept", in_bytes);
      out_.write(body);
    }
  }

 private:
  Output& out_;
  Output* rejects_;
  bool dedup_;
  std::unordered_set<uint64_t> seen_;
};

void print_summary(const JsonlStats& stats, double seconds, bool quiet) {
  bool lost = false;
  for (const auto& [name, n] : stats.counts.items()) lost |= name.starts_with("skipped") || name.starts_with("replaced");
  if (quiet && !lost) return;
  std::fprintf(stderr, "scrape-filter: %llu documents, %.1f MB in %.2f s (%.1f MB/s)\n",
               static_cast<unsigned long long>(stats.documents), double(stats.bytes) / 1e6, seconds,
               seconds > 0 ? double(stats.bytes) / 1e6 / seconds : 0.0);
  // kept, then the rules by documents dropped (most first), then everything else.
  std::vector<std::pair<std::string, uint64_t>> rows;
  for (const auto& item : stats.counts.items())
    if (!item.first.starts_with("bytes ")) rows.push_back(item);
  auto rank = [](const std::string& name) { return name == "kept" ? 0 : name.starts_with("dropped") ? 1 : 2; };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    if (rank(a.first) != rank(b.first)) return rank(a.first) < rank(b.first);
    if (rank(a.first) == 1 && a.second != b.second) return a.second > b.second;
    return rank(a.first) == 1 ? a.first < b.first : false;
  });
  for (const auto& [name, n] : rows) {
    uint64_t bytes = stats.counts.get("bytes " + name);
    double share = stats.documents ? 100.0 * double(n) / double(stats.documents) : 0;
    if (rank(name) < 2)
      std::fprintf(stderr, "  %-40s %10llu docs %5.1f%% %10.2f MB\n", name.c_str(), static_cast<unsigned long long>(n),
                   share, double(bytes) / 1e6);
    else
      std::fprintf(stderr, "  %-40s %10llu\n", name.c_str(), static_cast<unsigned long long>(n));
  }
}

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
    try {
      v.push_back(std::stod(x));
    } catch (const std::exception&) {
      throw UsageError(std::string(what) + ": not a number: " + x);
    }
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
  Settings s;
  ScrapeConfig& c = s.config;
  auto& gq = c.gopher_quality_config;
  auto& gr = c.gopher_repetition_config;
  auto& c4 = c.c4_config;
  auto& fw = c.fineweb_config;
  std::string rules = "gopher,c4,fineweb", lang, top_ngrams = "0.20,0.18,0.16",
              dup_ngrams = "0.15,0.14,0.13,0.12,0.11,0.10", decontam_mode = "split", rejects_path;
  std::vector<std::string> blocklists, decontam_files;
  size_t decontam_ngram = 13, min_url_length = 9;
  bool no_url_rules = false, no_url_dedup = false, no_ext = false, megatron_domains = false, no_repair = false, c4_no_punct = false;
  cli.options().add_options()
      ("url-key", po::value(&s.url_key)->default_value("url"), "field holding the URL")
      ("text-key", po::value(&s.text_key)->default_value("text"), "field holding (and receiving) the text")
      ("html", po::bool_switch(&c.html), "extract the main text from the HTML page in --html-key into --text-key")
      ("html-key", po::value(&s.html_key)->default_value("html"), "field holding the HTML page")
      ("url-blocklist", po::value(&blocklists)->composing(), "domain blocklist file (repeatable; subdomains match)")
      ("min-url-length", po::value(&min_url_length)->default_value(9), "drop URLs shorter than this")
      ("no-url-rules", po::bool_switch(&no_url_rules), "skip the URL rules (blocklist, extension, length, shape)")
      ("megatron-domains", po::bool_switch(&megatron_domains),
       "also drop Megatron's openwebtext domains (111 names: imgur, youtube, reddit, github, ...)")
      ("no-url-extensions", po::bool_switch(&no_ext), "keep URLs ending in Megatron's file extensions")
      ("no-url-dedup", po::bool_switch(&no_url_dedup), "keep documents whose URL was seen before")
      ("no-repair", po::bool_switch(&no_repair), "skip text repair (mojibake, controls, whitespace, NFC)")
      ("rules", po::value(&rules)->default_value(rules), "quality rule sets: gopher, gopher-quality, gopher-repetition, c4, fineweb, all, none")
      ("min-chars", po::value(&c.length.min_chars)->default_value(0), "minimum length in characters")
      ("min-words", po::value(&c.length.min_words)->default_value(0), "minimum length in words")
      ("gopher-min-words", po::value(&gq.min_words)->default_value(gq.min_words), "Gopher: minimum words")
      ("gopher-max-words", po::value(&gq.max_words)->default_value(gq.max_words), "Gopher: maximum words")
      ("gopher-min-avg-word-length", po::value(&gq.min_avg_word_length)->default_value(3), "Gopher: minimum mean word length")
      ("gopher-max-avg-word-length", po::value(&gq.max_avg_word_length)->default_value(10), "Gopher: maximum mean word length")
      ("gopher-max-symbol-ratio", po::value(&gq.max_symbol_word_ratio)->default_value(0.1, "0.1"), "Gopher: max '#' and ellipses per word")
      ("gopher-max-bullet-lines", po::value(&gq.max_bullet_lines_ratio)->default_value(0.9, "0.9"), "Gopher: max share of bullet lines")
      ("gopher-max-ellipsis-lines", po::value(&gq.max_ellipsis_lines_ratio)->default_value(0.3, "0.3"), "Gopher: max share of lines ending in an ellipsis")
      ("gopher-min-alpha-words", po::value(&gq.min_alpha_words_ratio)->default_value(0.8, "0.8"), "Gopher: min share of words with a letter")
      ("gopher-min-stop-words", po::value(&gq.min_stop_words)->default_value(2), "Gopher: min distinct stop words")
      ("gopher-dup-line-frac", po::value(&gr.dup_line_frac)->default_value(0.3, "0.3"), "Gopher: max share of duplicate lines")
      ("gopher-dup-para-frac", po::value(&gr.dup_para_frac)->default_value(0.3, "0.3"), "Gopher: max share of duplicate paragraphs")
      ("gopher-dup-line-char-frac", po::value(&gr.dup_line_char_frac)->default_value(0.2, "0.2"), "Gopher: max char share of duplicate lines")
      ("gopher-dup-para-char-frac", po::value(&gr.dup_para_char_frac)->default_value(0.2, "0.2"), "Gopher: max char share of duplicate paragraphs")
      ("gopher-top-ngram-frac", po::value(&top_ngrams)->default_value(top_ngrams), "Gopher: max char share of the top 2,3,4-gram")
      ("gopher-dup-ngram-frac", po::value(&dup_ngrams)->default_value(dup_ngrams), "Gopher: max char share of duplicated 5..10-grams")
      ("c4-min-words-per-line", po::value(&c4.min_words_per_line)->default_value(3), "C4: lines with fewer words are removed (TFDS: 5)")
      ("c4-min-sentences", po::value(&c4.min_sentences)->default_value(5), "C4: minimum sentences in the kept lines (TFDS: 3)")
      ("c4-max-word-length", po::value(&c4.max_word_length)->default_value(1000), "C4: lines with a longer word are removed")
      ("c4-no-terminal-punct", po::bool_switch(&c4_no_punct), "C4: keep lines without terminal punctuation (as FineWeb ran it)")
      ("fineweb-min-line-punct", po::value(&fw.min_line_punct_ratio)->default_value(0.12, "0.12"), "FineWeb: min share of lines ending in punctuation")
      ("fineweb-short-line-length", po::value(&fw.short_line_length)->default_value(30), "FineWeb: a short line has at most this many chars")
      ("fineweb-max-short-lines", po::value(&fw.max_short_line_ratio)->default_value(0.67, "0.67"), "FineWeb: max share of short lines")
      ("fineweb-max-char-dup", po::value(&fw.max_char_dup_ratio)->default_value(0.01, "0.01"), "FineWeb: max char share of duplicated lines")
      ("fineweb-max-newline-ratio", po::value(&fw.max_newline_ratio)->default_value(0.3, "0.3"), "FineWeb: max newlines per word")
      ("lang", po::value(&lang), "keep these CLD2 languages (e.g. en,de; 'any' only records lang and lang_score)")
      ("lang-threshold", po::value(&c.language.threshold)->default_value(0.5, "0.5"), "minimum share of the text in the language")
      ("decontaminate", po::value(&decontam_files)->composing(), "evaluation texts (JSONL `text` or one per line; repeatable)")
      ("decontaminate-ngram", po::value(&decontam_ngram)->default_value(13), "n-gram length in words")
      ("decontaminate-mode", po::value(&decontam_mode)->default_value("split"), "split (Megatron) or drop")
      ("rejects", po::value(&rejects_path), "write dropped documents here, with `rejected_by`");
  CommonOptions options = cli.parse(argc, argv);
  s.shard = options.shard;
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
  if (decontam_ngram < 1) throw UsageError("--decontaminate-ngram must be at least 1");

  filter::UrlRules url_rules({.check_extension = !no_ext,
                              .megatron_domains = megatron_domains,
                              .min_length = min_url_length});
  for (const std::string& f : blocklists) url_rules.load_blocklist(f);
  std::unique_ptr<filter::Decontaminator> decontam;
  if (!decontam_files.empty()) {
    decontam = std::make_unique<filter::Decontaminator>(
        filter::DecontamConfig{.ngram = decontam_ngram, .split = decontam_mode == "split"});
    for (const std::string& f : decontam_files) decontam->load(f);
  }

  auto out = open_output(options.output);
  std::unique_ptr<Output> rejects;
  if (!rejects_path.empty()) rejects = open_output(rejects_path);
  s.rejects = rejects != nullptr;
  Consumer consumer(*out, rejects.get(), c.url_dedup);
  auto start = std::chrono::steady_clock::now();
  JsonlStats stats = run_jsonl(
      options,
      [&] { return std::make_unique<FilterWorker>(s, &url_rules, decontam.get()); },
      [&](ChunkOutput& chunk) { consumer(chunk); }, {.print_summary = false});
  out->close();
  if (rejects) rejects->close();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_summary(stats, seconds, options.quiet);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("scrape-filter", argc, argv, suite::body); }
