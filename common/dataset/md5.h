// MD5 (RFC 1321) as lowercase hex, for Megatron's md5-named index caches. Not for security.
#pragma once

#include <string>
#include <string_view>

namespace suite::dataset {

std::string md5_hex(std::string_view data);

}  // namespace suite::dataset
