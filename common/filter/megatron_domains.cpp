#include "common/filter/megatron_domains.h"

#include <algorithm>
#include <array>

namespace suite::filter {

const std::vector<std::string_view>& megatron_domain_labels() {
  // Sorted, as in the original file, so that lookups can binary-search.
  static const std::vector<std::string_view> kLabels = {
      "500px", "aapks", "akamaihd", "amazon", "apple", "artifactfire", "artstation", "awwni",
      "bandcamp", "battleforthenet", "coinscalendar", "dailymotion", "deviantart", "discord",
      "discordapp", "dlapkandroid", "dropbox", "e621", "ebay", "edealinfo", "erome", "eroshare",
      "explosm", "facebook", "fbcdn", "flickr", "furaffinity", "futhead", "gatopardo", "gfycat",
      "gifsound", "gifsoup", "giphy", "github", "google", "gunprime", "gyazo", "horsefucker", "hotdealstar",
      "imagefap", "imageshack", "imgflip", "imgur", "instagram", "karmadecay", "kryptocal",
      "kym-cdn", "liveleak", "livememe", "lmgtfy", "magaimg", "memegenerator", "minorplanetcenter",
      "minus", "mobafire", "morejpeg", "nocookie", "pcpartpicker", "photobucket", "pinimg",
      "pinterest", "pixiv", "pornhub", "prntscr", "puu", "qkme", "quickmeme", "radd", "redd",
      "reddit", "reddit-stream", "redditlog", "redditmedia", "reddituploads", "redtube", "reupp",
      "reverb", "roanoke", "rollingstone", "sli", "soundcloud", "soundgasm", "spankbang", "spotify",
      "strawpoll", "streamable", "timeanddate", "tinypic", "touhouradio", "tumblr", "twimg",
      "twitch", "twitter", "vid", "vimeo", "vine", "vkaao", "vocaroo", "voyagefusion", "walmart",
      "wciu", "wikimedia", "wikipedia", "xhamster", "xkcd", "xvideos", "youtu", "youtube",
      "youtubedoubler", "ytimg", "zillexplorer"};
  return kLabels;
}

namespace {

// Second-level labels under which country TLDs register names ("co.uk", "com.au", "ac.jp", ...).
bool country_second_level(std::string_view label) {
  static constexpr std::array<std::string_view, 20> kSecond = {
      "ac", "co", "com", "edu", "go", "gob", "gov", "gv", "info", "ltd",
      "mil", "ne", "net", "nic", "nom", "or", "org", "plc", "sch", "biz"};
  return std::find(kSecond.begin(), kSecond.end(), label) != kSecond.end();
}

}  // namespace

std::string_view registrable_label(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  size_t last = host.rfind('.');
  if (last == std::string_view::npos) return host;
  std::string_view rest = host.substr(0, last), tld = host.substr(last + 1);
  size_t prev = rest.rfind('.');
  std::string_view label = prev == std::string_view::npos ? rest : rest.substr(prev + 1);
  if (tld.size() == 2 && prev != std::string_view::npos && country_second_level(label)) {
    rest = rest.substr(0, prev);
    prev = rest.rfind('.');
    label = prev == std::string_view::npos ? rest : rest.substr(prev + 1);
  }
  return label;
}

bool megatron_domain_blocked(std::string_view host) {
  const auto& labels = megatron_domain_labels();
  return std::binary_search(labels.begin(), labels.end(), registrable_label(host));
}

}  // namespace suite::filter
