#include "common/filter/scrape_filter_job.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_set>

#include "common/cli/error.h"
#include "common/io/output.h"
#include "common/jsonl/json_writer.h"
#include "common/jsonl/jsonl_runner.h"

namespace suite::filter {
namespace {

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

class FilterWorker final : public DocumentWorker {
 public:
  FilterWorker(const ScrapeFilterConfig& s, const UrlRules* url_rules, const Decontaminator* decontam)
      : s_(s), filter_(s.config, url_rules, decontam) {}

  void process(JsonLine& doc, const DocContext& where, ChunkOutput& out) override {
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
    if (!s_.rejects_path.empty()) {
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
      // A repeated rewritten key is written once, at its first position (as Python's json keeps it).
      if (f.key == s_.text_key) {
        if (!text_done) obj.string_field(s_.text_key, text);
        text_done = true;
      } else if (lang && f.key == "lang") {
        if (!lang_done) obj.string_field("lang", result_.language->code);
        lang_done = true;
      } else if (lang && f.key == "lang_score") {
        if (!score_done) append_score(obj);
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

  const ScrapeFilterConfig& s_;
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

}  // namespace

void run_scrape_filter(const CommonOptions& options, const ScrapeFilterConfig& s) {
  UrlRules url_rules(s.url_rules);
  for (const std::string& f : s.blocklists) url_rules.load_blocklist(f);
  std::unique_ptr<Decontaminator> decontaminator;
  if (!s.decontaminate.empty()) {
    decontaminator = std::make_unique<Decontaminator>(s.decontam);
    for (const std::string& f : s.decontaminate) decontaminator->load(f);
  }
  const Decontaminator* decontam = decontaminator.get();
  auto out = open_output(options.output);
  std::unique_ptr<Output> rejects;
  if (!s.rejects_path.empty()) rejects = open_output(s.rejects_path);
  Consumer consumer(*out, rejects.get(), s.config.url_dedup);
  auto start = std::chrono::steady_clock::now();
  JsonlStats stats = run_jsonl(
      options, [&] { return std::make_unique<FilterWorker>(s, &url_rules, decontam); },
      [&](ChunkOutput& chunk) { consumer(chunk); }, {.print_summary = false});
  out->close();
  if (rejects) rejects->close();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_summary(stats, seconds, options.quiet);
}

}  // namespace suite::filter
