// URL rules of scrape-filter, after Megatron's tools/openwebtext/blacklist_urls.py (domain list,
// file extensions, minimum length, malformed URLs) with datatrove-style subdomain matching:
// a blocklist entry "example.com" drops example.com, www.example.com and a.b.example.com, but not
// notexample.com. Hosts are compared lowercased, without a trailing dot, in IDNA ASCII form, so
// "bücher.de" and "xn--bcher-kva.de" match each other. (Exact-duplicate URLs need state across
// documents; the tool handles them in input order, see url_seen.h.)
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace suite::filter {

// Lets unordered_set<std::string> be searched with a string_view, without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringSet = std::unordered_set<std::string, StringHash, std::equal_to<>>;

struct UrlParts {
  std::string_view scheme, host, port, path;  // path without query and fragment
};

// Splits scheme://[user@]host[:port][/path][?query][#fragment]; false when there is no "://" or no host.
bool split_url(std::string_view url, UrlParts& parts);

// Lowercase ASCII host in IDNA form ("" when the host is not a valid IDNA name).
std::string canonical_host(std::string_view host);

// Megatron's extension list (with '.7z' and '.ai' separate: the original's missing comma joined them).
const std::vector<std::string_view>& megatron_extensions();

struct UrlRulesConfig {
  bool check_domain = true;
  bool check_extension = true;
  bool check_malformed = true;
  bool megatron_domains = false;  // also Megatron's 111 domain labels (megatron_domains.h)
  size_t min_length = 9;  // Megatron drops URLs of <= 8 characters
};

class UrlRules {
 public:
  explicit UrlRules(UrlRulesConfig config = {}) : config_(config) {}
  // Adds one blocklist entry ("example.com", "*.example.com", ".example.com" or a URL); ignores blanks.
  void block_domain(std::string_view entry);
  // Reads a blocklist file: one entry per line, '#' starts a comment. Throws ToolError.
  void load_blocklist(const std::string& path);
  size_t blocked_domains() const { return blocked_.size(); }

  // The rule that drops `url`, or nullptr: "url_too_short", "url_malformed", "url_blocklist",
  // "url_megatron_domain", "url_extension".
  const char* check(std::string_view url) const;
  // True when `host` (canonical) or one of its parent domains is on the blocklist.
  bool host_blocked(std::string_view canonical) const;

 private:
  UrlRulesConfig config_;
  StringSet blocked_;
};

// The Django-style shape Megatron required: http(s), dotted labels with a letter TLD (or an IPv4
// address, or localhost), an optional numeric port, no whitespace.
bool url_well_formed(const UrlParts& parts, std::string_view canonical_host, std::string_view url);

}  // namespace suite::filter
