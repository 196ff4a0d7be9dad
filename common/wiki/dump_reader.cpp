#include "common/wiki/dump_reader.h"

#include <algorithm>
#include <cstring>

#include "common/cli/error.h"
#include "common/wiki/entities.h"

namespace suite::wiki {
namespace {

constexpr size_t kReadBytes = 4 << 20;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool is_xml_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

DumpReader::DumpReader(std::unique_ptr<Input> input, uint64_t max_element_bytes)
    : input_(std::move(input)), max_element_bytes_(max_element_bytes) {}

void DumpReader::fail(uint64_t line, const std::string& what) const { throw ToolError(location(name(), line), what); }

bool DumpReader::fill() {
  if (eof_) return false;
  if (pos_ > 0) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  size_t old = buf_.size();
  buf_.resize(old + kReadBytes);
  size_t got = 0;
  try {
    got = input_->read(buf_.data() + old, kReadBytes);
  } catch (const ToolError& e) {
    // A truncated or corrupt compressed stream: say how far the XML got.
    buf_.resize(old);
    fail(line_ + static_cast<uint64_t>(std::count(buf_.begin(), buf_.end(), '\n')), e.what());
  }
  buf_.resize(old + got);
  if (got == 0) eof_ = true;
  return got > 0;
}

bool DumpReader::ensure(size_t n) {
  while (buf_.size() - pos_ < n)
    if (!fill()) return false;
  return true;
}

size_t DumpReader::find_ahead(std::string_view needle, size_t from) {
  for (;;) {
    size_t hit = std::string_view(buf_).find(needle, pos_ + from);
    size_t have = hit != std::string_view::npos ? hit - pos_ + needle.size() : buf_.size() - pos_;
    if (have > max_element_bytes_)
      fail(line_, "element longer than --max-line-bytes (" + std::to_string(max_element_bytes_) + " bytes)");
    if (hit != std::string_view::npos) return hit - pos_;
    if (have >= needle.size()) from = std::max(from, have - needle.size() + 1);
    if (!fill()) return std::string_view::npos;
  }
}

void DumpReader::advance(size_t n) {
  line_ += static_cast<uint64_t>(std::count(buf_.begin() + pos_, buf_.begin() + pos_ + n, '\n'));
  pos_ += n;
}

void DumpReader::read_siteinfo(std::string_view xml) {
  size_t open = xml.find("<base>");
  size_t close = xml.find("</base>");
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return;
  std::string base;
  decode_xml_entities(xml.substr(open + 6, close - open - 6), base);
  size_t slash = base.rfind('/');
  if (slash != std::string::npos) base_url_ = base.substr(0, slash + 1);
}

bool DumpReader::next(PageSlice& page) {
  for (;;) {
    // Whitespace between elements.
    while (true) {
      while (pos_ < buf_.size() && is_xml_space(buf_[pos_])) {
        if (buf_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ < buf_.size() || !fill()) break;
    }
    if (pos_ == buf_.size()) {
      if (!seen_root_) fail(0, "not a MediaWiki XML dump (no <mediawiki> element)");
      if (!closed_) fail(line_, "unexpected end of file: no </mediawiki> (truncated dump?)");
      return false;
    }
    ensure(16);
    std::string_view rest = std::string_view(buf_).substr(pos_);
    if (rest[0] != '<') {
      if (!seen_root_) fail(line_, "not a MediaWiki XML dump (no <mediawiki> element)");
      fail(line_, "malformed XML: text outside of <page> elements");
    }
    if (closed_ && !starts_with(rest, "<!--")) fail(line_, "malformed XML: content after </mediawiki>");
    if (starts_with(rest, "<?") || starts_with(rest, "<!--")) {
      bool comment = rest[1] == '!';
      size_t end = find_ahead(comment ? "-->" : "?>", 2);
      if (end == std::string_view::npos) fail(line_, "unexpected end of file inside an XML declaration or comment");
      advance(end + (comment ? 3 : 2));
    } else if (starts_with(rest, "<mediawiki") && !seen_root_) {
      size_t end = find_ahead(">", 10);
      if (end == std::string_view::npos) fail(line_, "unexpected end of file inside <mediawiki>");
      seen_root_ = true;
      advance(end + 1);
    } else if (!seen_root_) {
      fail(line_, "not a MediaWiki XML dump (no <mediawiki> element)");
    } else if (starts_with(rest, "<siteinfo>")) {
      size_t end = find_ahead("</siteinfo>", 10);
      if (end == std::string_view::npos) fail(line_, "unexpected end of file inside <siteinfo> (truncated dump?)");
      read_siteinfo(std::string_view(buf_).substr(pos_, end));
      advance(end + 11);
    } else if (starts_with(rest, "<page>") || starts_with(rest, "<page ")) {
      size_t end = find_ahead("</page>", 6);
      if (end == std::string_view::npos) fail(line_, "unexpected end of file inside <page> (truncated dump?)");
      page.xml = std::string_view(buf_).substr(pos_, end + 7);
      page.line = line_;
      advance(end + 7);
      return true;
    } else if (starts_with(rest, "</mediawiki>")) {
      closed_ = true;
      advance(12);
    } else {
      size_t n = 1;
      while (n < rest.size() && n < 40 && !is_xml_space(rest[n]) && rest[n] != '>') ++n;
      fail(line_, "malformed XML: unexpected " + std::string(rest.substr(0, n)) + "> between pages");
    }
  }
}

}  // namespace suite::wiki
