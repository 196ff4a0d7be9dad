#include "common/filter/url_rules.h"

#include <unicode/bytestream.h>
#include <unicode/idna.h>

#include <fstream>
#include <memory>

#include "common/cli/error.h"
#include "common/filter/megatron_domains.h"

namespace suite::filter {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c + 32) : c; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  s.remove_prefix(s.size() - suffix.size());
  for (size_t i = 0; i < s.size(); ++i)
    if (lower(s[i]) != suffix[i]) return false;
  return true;
}

const icu::IDNA& idna() {
  static const icu::IDNA* instance = [] {
    UErrorCode err = U_ZERO_ERROR;
    icu::IDNA* p = icu::IDNA::createUTS46Instance(UIDNA_NONTRANSITIONAL_TO_ASCII, err);
    if (U_FAILURE(err)) throw ToolError(std::string("ICU IDNA: ") + u_errorName(err));
    return p;
  }();
  return *instance;
}

bool is_ipv4(std::string_view h) {
  int parts = 0;
  size_t i = 0;
  while (i <= h.size()) {
    size_t start = i;
    while (i < h.size() && is_digit(h[i])) ++i;
    if (i == start || i - start > 3) return false;
    ++parts;
    if (i == h.size()) break;
    if (h[i] != '.') return false;
    ++i;
  }
  return parts == 4;
}

}  // namespace

bool split_url(std::string_view url, UrlParts& p) {
  size_t colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0) return false;
  p.scheme = url.substr(0, colon);
  std::string_view rest = url.substr(colon + 3);
  size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view tail = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  p.port = {};
  if (size_t c = authority.rfind(':'); c != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    p.port = authority.substr(c + 1);
    authority = authority.substr(0, c);
  }
  p.host = authority;
  size_t q = tail.find_first_of("?#");
  p.path = tail.substr(0, q);
  return !p.host.empty();
}

std::string canonical_host(std::string_view host) {
  std::string out;
  bool ascii = true;
  for (char c : host) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) {
    out.reserve(host.size());
    for (char c : host) out += lower(c);
  } else {
    UErrorCode err = U_ZERO_ERROR;
    icu::IDNAInfo info;
    icu::StringByteSink<std::string> sink(&out);
    idna().nameToASCII_UTF8(icu::StringPiece(host.data(), int32_t(host.size())), sink, info, err);
    if (U_FAILURE(err) || info.hasErrors()) return {};
  }
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

const std::vector<std::string_view>& megatron_extensions() {
  static const std::vector<std::string_view> list = {
      ".3gp", ".7z",   ".ai",   ".aif",  ".apk",  ".app",  ".avi",  ".bin",  ".bmp",    ".bz2",  ".css", ".csv",
      ".dat", ".deb",  ".dmg",  ".doc",  ".docx", ".exe",  ".gif",  ".gifv", ".gz",     ".iso",  ".jar", ".jpeg",
      ".jpg", ".js",   ".log",  ".mid",  ".midi", ".mkv",  ".mov",  ".mp3",  ".mp4",    ".mpeg", ".mpg", ".ogg",
      ".ogv", ".otf",  ".pdf",  ".pkg",  ".png",  ".pps",  ".ppt",  ".pptx", ".psd",    ".py",   ".qt",  ".ram",
      ".rar", ".sql",  ".svg",  ".swf",  ".tar.gz", ".tar", ".tgz", ".tiff", ".ttf",    ".txt",  ".wav", ".webm",
      ".wma", ".wmv",  ".xls",  ".xlsx", ".xml",  ".xz",   ".zip"};
  return list;
}

void UrlRules::block_domain(std::string_view entry) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
  };
  entry = trim(entry);
  if (entry.empty() || entry.front() == '#') return;
  UrlParts parts;
  if (entry.find("://") != std::string_view::npos && split_url(entry, parts)) entry = parts.host;
  if (entry.starts_with("*.")) entry.remove_prefix(2);
  while (!entry.empty() && entry.front() == '.') entry.remove_prefix(1);
  std::string host = canonical_host(entry);
  if (!host.empty()) blocked_.insert(std::move(host));
}

void UrlRules::load_blocklist(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ToolError(path, "cannot open the URL blocklist");
  std::string line;
  while (std::getline(in, line)) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    block_domain(line);
  }
}

bool UrlRules::host_blocked(std::string_view host) const {
  if (blocked_.empty()) return false;
  for (size_t pos = 0;;) {
    if (blocked_.find(host.substr(pos)) != blocked_.end()) return true;
    size_t dot = host.find('.', pos);
    if (dot == std::string::npos) return false;
    pos = dot + 1;
  }
}

bool url_well_formed(const UrlParts& p, std::string_view host, std::string_view url) {
  if (!(p.scheme.size() == 4 && ends_with_ci(p.scheme, "http")) &&
      !(p.scheme.size() == 5 && ends_with_ci(p.scheme, "https")))
    return false;
  for (char c : url)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return false;
  if (!p.port.empty()) {
    if (p.port.size() > 5) return false;
    unsigned v = 0;
    for (char c : p.port) {
      if (!is_digit(c)) return false;
      v = v * 10 + unsigned(c - '0');
    }
    if (v > 65535) return false;
  }
  if (host.empty()) return false;
  if (host == "localhost" || is_ipv4(host)) return true;
  int labels = 0;
  std::string_view last;
  size_t i = 0;
  while (i <= host.size()) {
    size_t dot = host.find('.', i);
    if (dot == std::string_view::npos) dot = host.size();
    std::string_view label = host.substr(i, dot - i);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!(is_alpha(c) || is_digit(c) || c == '-')) return false;
    ++labels;
    last = label;
    i = dot + 1;
    if (dot == host.size()) break;
  }
  if (labels < 2) return false;
  // The TLD: 2+ letters, or an IDNA label (xn--...).
  bool letters = last.size() >= 2;
  for (char c : last) letters &= is_alpha(c);
  return letters || last.starts_with("xn--");
}

const char* UrlRules::check(std::string_view url) const {
  if (url.size() < config_.min_length) return "url_too_short";
  UrlParts parts;
  bool split = split_url(url, parts);
  std::string host = split ? canonical_host(parts.host) : std::string();
  if (config_.check_malformed && (!split || !url_well_formed(parts, host, url))) return "url_malformed";
  if (config_.check_domain && !host.empty() && host_blocked(host)) return "url_blocklist";
  if (config_.megatron_domains && !host.empty() && megatron_domain_blocked(host))
    return "url_megatron_domain";
  if (config_.check_extension && split) {
    for (std::string_view ext : megatron_extensions())
      if (ends_with_ci(parts.path, ext)) return "url_extension";
  }
  return nullptr;
}

}  // namespace suite::filter
