// Megatron's openwebtext domain list (tools/openwebtext/blacklist_urls.py as of 2023, removed from Megatron-LM
// in 2025): 111 registrable-domain labels of image, video, social, shop and adult hosts plus
// reddit's own. Megatron compared them with tldextract's `domain`, the label just left of the
// public suffix, so "google" matches google.com, google.co.uk and docs.google.com but not
// google.example.com. registrable_label() approximates that without the Public Suffix List: the
// suffix is the last label, or the last two when they look like a country's second level
// ("co.uk", "com.au", "ac.jp", ...).
#pragma once

#include <string_view>
#include <vector>

namespace suite::filter {

const std::vector<std::string_view>& megatron_domain_labels();

// The registrable label of a canonical (lowercase ASCII) host; the host itself when it has one label.
std::string_view registrable_label(std::string_view host);

// True when registrable_label(host) is on Megatron's list.
bool megatron_domain_blocked(std::string_view host);

}  // namespace suite::filter
