// The per-page work of wiki-extract, run on worker threads: pick articles, clean them, write JSONL.
//
// A page becomes {"id","url","title","text"} when it is in the main namespace (ns 0), is not a
// redirect (<redirect/> element or "#REDIRECT" text) and has text left after cleaning; the other
// outcomes are counted ("redirects", "other namespaces", "empty after cleaning"). A malformed page
// or one with invalid UTF-8 follows --on-error: fail (`file:line: what`), skip (counted as
// "skipped: malformed page" / "skipped: invalid UTF-8"), or replace (invalid UTF-8 -> U+FFFD).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cli/options.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/wiki/wikitext.h"

namespace suite::wiki {

// Pages of one input, copied out of the reader's buffer so that a worker can own them.
struct PageBatch {
  struct Ref {
    size_t offset, size;  // in xml
    uint64_t line;        // of "<page>" in the input
  };
  std::string xml;
  std::vector<Ref> pages;
  std::string source;    // input name for messages
  std::string base_url;  // from the dump's <siteinfo>, may be empty
  void clear() {
    xml.clear();
    pages.clear();
  }
};

class PageExtractor {
 public:
  // `base_url_override` replaces the dump's base when not empty.
  PageExtractor(OnError policy, std::string base_url_override);
  void process(const PageBatch& batch, ChunkOutput& out);

 private:
  void process_page(const PageBatch& batch, const PageBatch::Ref& ref, ChunkOutput& out);
  // fail: throws ToolError at the line `offset` bytes into the page; skip/replace: counts `reason`.
  void problem(const PageBatch& batch, const PageBatch::Ref& ref, size_t offset, const std::string& reason,
               const std::string& message, ChunkOutput& out);

  OnError policy_;
  std::string base_override_;
  WikitextCleaner cleaner_;
  std::string title_, url_, wikitext_, text_, repaired_, repaired_title_;
};

}  // namespace suite::wiki
