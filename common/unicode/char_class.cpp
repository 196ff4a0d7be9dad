#include "common/unicode/char_class.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace suite::unicode {

namespace {
constexpr CharClassRange kRanges[] = {
#include "common/unicode/char_class_ranges.inc"
};
}  // namespace

std::span<const CharClassRange> char_class_ranges() { return kRanges; }

CharClassTable::CharClassTable() {
  std::vector<uint8_t> flat(0x110000, 0);
  for (const auto& r : kRanges)
    for (char32_t c = r.first; c <= r.last; ++c) flat[c] = static_cast<uint8_t>(r.cls);
  std::map<std::string, uint16_t> unique;  // block content -> block index
  std::string all;
  for (uint32_t b = 0; b < 0x1100; ++b) {
    std::string block(reinterpret_cast<const char*>(&flat[b * 256]), 256);
    auto [it, fresh] = unique.emplace(block, static_cast<uint16_t>(unique.size()));
    if (fresh) all += block;
    stage1_[b] = it->second;
  }
  // Lives as long as the process (the table is a never-destroyed singleton).
  blocks_ = new uint8_t[all.size()];
  std::memcpy(blocks_, all.data(), all.size());
}

const CharClassTable& CharClassTable::get() {
  static const CharClassTable* table = new CharClassTable();
  return *table;
}

}  // namespace suite::unicode
