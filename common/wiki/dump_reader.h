// Splits a MediaWiki XML dump into pages without parsing them: the single-threaded part of
// wiki-extract, so it only looks for element boundaries (memmem speed) and counts lines for messages.
//
//   <mediawiki ...> <siteinfo>...<base>URL</base>...</siteinfo> <page>...</page> ... </mediawiki>
//
// Structure errors (no <mediawiki>, text between pages, a <page> or the dump cut off by the end of the
// file, truncated compressed input) are a ToolError `file:line: what`: nothing after them can be
// trusted, so they stop the run whatever --on-error says.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/io/input.h"

namespace suite::wiki {

struct PageSlice {
  std::string_view xml;  // "<page>...</page>", valid until the next call to next()
  uint64_t line = 0;     // 1-based line of "<page>" in the input
};

class DumpReader {
 public:
  // max_element_bytes (--max-line-bytes): the longest <page> (or other element) held in memory;
  // a longer one stops the run with file:line, like any structure error.
  explicit DumpReader(std::unique_ptr<Input> input, uint64_t max_element_bytes = UINT64_MAX);
  // The next page; false after </mediawiki> and the end of the input.
  bool next(PageSlice& page);
  // The directory part of <siteinfo><base> ("https://en.wikipedia.org/wiki/"), empty when absent.
  // Known once the first page has been returned (siteinfo precedes the pages).
  const std::string& base_url() const { return base_url_; }
  const std::string& name() const { return input_->name(); }
  uint64_t raw_bytes_read() const { return input_->raw_bytes_read(); }

 private:
  bool fill();  // reads more input after compacting the buffer; false at the end of the input
  // Offset (from pos_) of `needle` at or after `from`, reading more as needed; npos if the input ends.
  size_t find_ahead(std::string_view needle, size_t from);
  bool ensure(size_t n);  // at least n bytes after pos_, unless the input ends first
  void advance(size_t n);
  [[noreturn]] void fail(uint64_t line, const std::string& what) const;
  void read_siteinfo(std::string_view xml);

  std::unique_ptr<Input> input_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t line_ = 1;  // line number at pos_
  bool eof_ = false;
  bool seen_root_ = false;
  bool closed_ = false;
  std::string base_url_;
  uint64_t max_element_bytes_;
};

}  // namespace suite::wiki
