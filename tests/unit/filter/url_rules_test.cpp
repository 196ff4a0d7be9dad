// common/filter/url_rules: Megatron's URL rules with subdomain-matching blocklists, on tricky URLs.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "common/filter/megatron_domains.h"
#include "common/filter/url_rules.h"

using suite::filter::UrlRules;

namespace {

UrlRules with_blocklist() {
  UrlRules r;
  r.block_domain("example.com");
  r.block_domain("*.ads.net");
  r.block_domain("bücher.de");          // IDN given in Unicode ...
  r.block_domain("xn--fiqs8s.cn");      // ... and in punycode (中国.cn)
  r.block_domain("https://Tracker.IO/whatever");
  r.block_domain("# a comment line");
  return r;
}

std::string rule(const UrlRules& r, const char* url) {
  const char* got = r.check(url);
  return got ? got : "kept";
}

}  // namespace

TEST_CASE("blocklist: the domain and every subdomain, nothing that only looks alike") {
  UrlRules r = with_blocklist();
  CHECK(r.blocked_domains() == 5);
  CHECK(rule(r, "https://example.com/page") == "url_blocklist");
  CHECK(rule(r, "https://WWW.Example.COM:8080/x") == "url_blocklist");      // uppercase and a port
  CHECK(rule(r, "https://a.b.example.com/?q=1#top") == "url_blocklist");    // deep subdomain, query
  CHECK(rule(r, "https://user:pw@example.com/") == "url_blocklist");        // userinfo is not the host
  CHECK(rule(r, "https://example.com./") == "url_blocklist");               // trailing root dot
  CHECK(rule(r, "https://cdn.ads.net/banner") == "url_blocklist");          // "*.ads.net" entry
  CHECK(rule(r, "https://tracker.io/p") == "url_blocklist");                // entry given as a URL
  CHECK(rule(r, "https://notexample.com/") == "kept");                      // suffix, not a subdomain
  CHECK(rule(r, "https://example.com.evil.org/") == "kept");                // prefix of another domain
  CHECK(rule(r, "https://example.org/?next=example.com") == "kept");        // only in the query
}

TEST_CASE("blocklist: IDN hosts match in Unicode and punycode") {
  UrlRules r = with_blocklist();
  CHECK(rule(r, "https://bücher.de/katalog") == "url_blocklist");
  CHECK(rule(r, "https://xn--bcher-kva.de/katalog") == "url_blocklist");
  CHECK(rule(r, "https://shop.BÜCHER.de/") == "url_blocklist");
  CHECK(rule(r, "https://中国.cn/") == "url_blocklist");
  CHECK(rule(r, "https://buecher.de/") == "kept");
}

TEST_CASE("extensions: Megatron's list on the path, the .7z/.ai comma bug fixed") {
  UrlRules r;
  CHECK(rule(r, "https://example.org/report.PDF?download=1") == "url_extension");
  CHECK(rule(r, "https://example.org/a/archive.tar.gz") == "url_extension");
  CHECK(rule(r, "https://example.org/a.7z") == "url_extension");
  CHECK(rule(r, "https://example.org/logo.ai") == "url_extension");
  CHECK(rule(r, "https://example.org/page.html?file=a.pdf") == "kept");     // the query does not count
  CHECK(rule(r, "https://example.org/post/python-tips") == "kept");
  CHECK(rule(r, "https://example.py/") == "kept");                          // a host, not a file
  UrlRules off({.check_extension = false});
  CHECK(rule(off, "https://example.org/report.pdf") == "kept");
}

TEST_CASE("length: URLs of at most 8 characters go (Megatron), 9 stay") {
  UrlRules r({.check_malformed = false});
  CHECK(rule(r, "http://x") == "url_too_short");    // 8
  CHECK(rule(r, "http://xy") == "kept");            // 9
  UrlRules longer({.check_malformed = false, .min_length = 20});
  CHECK(rule(longer, "https://example.org") == "url_too_short");  // 19
  CHECK(rule(longer, "https://example.org/") == "kept");          // 20
}

TEST_CASE("malformed URLs") {
  UrlRules r;
  CHECK(rule(r, "ftp://example.org/file") == "url_malformed");
  CHECK(rule(r, "example.org/no-scheme") == "url_malformed");
  CHECK(rule(r, "https://exa mple.org/") == "url_malformed");
  CHECK(rule(r, "https://example.org:99999/") == "url_malformed");
  CHECK(rule(r, "https://example.org:80a/") == "url_malformed");
  CHECK(rule(r, "https://-bad-.org/") == "url_malformed");
  CHECK(rule(r, "https://nodot/") == "url_malformed");
  CHECK(rule(r, "https://example.c/") == "url_malformed");   // one-letter TLD
  CHECK(rule(r, "https:///path-only") == "url_malformed");
  CHECK(rule(r, "HTTPS://Example.org:8443/a%20b?x=1") == "kept");
  CHECK(rule(r, "http://192.168.0.1/admin") == "kept");
  CHECK(rule(r, "http://localhost:8000/") == "kept");
  CHECK(rule(r, "https://xn--bcher-kva.de/") == "kept");
}

TEST_CASE("--megatron-domains: Megatron's 111 labels, matched on the registrable label") {
  CHECK(suite::filter::megatron_domain_labels().size() == 111);
  CHECK(std::is_sorted(suite::filter::megatron_domain_labels().begin(),
                       suite::filter::megatron_domain_labels().end()));
  using suite::filter::registrable_label;
  CHECK(registrable_label("docs.google.com") == "google");
  CHECK(registrable_label("www.google.co.uk") == "google");   // country second level
  CHECK(registrable_label("bbc.co.uk") == "bbc");
  CHECK(registrable_label("i.imgur.com") == "imgur");
  CHECK(registrable_label("localhost") == "localhost");
  UrlRules off, on({.megatron_domains = true});
  CHECK(rule(off, "https://www.youtube.com/watch?v=x") == "kept");   // only when asked for
  CHECK(rule(on, "https://www.youtube.com/watch?v=x") == "url_megatron_domain");
  CHECK(rule(on, "https://m.youtube.com/") == "url_megatron_domain");
  CHECK(rule(on, "https://google.co.uk/search") == "url_megatron_domain");
  CHECK(rule(on, "http://youtu.be/abc") == "url_megatron_domain");
  CHECK(rule(on, "https://vid.me/clip") == "url_megatron_domain");
  CHECK(rule(on, "https://google.example.com/") == "kept");        // a subdomain named google
  CHECK(rule(on, "https://notgoogle.com/") == "kept");
  CHECK(rule(on, "https://video.example.org/") == "kept");          // "vid" is a whole label
}
