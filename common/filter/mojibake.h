// Repair of the commonest mojibake: UTF-8 bytes that were decoded as Windows-1252 (or Latin-1)
// and re-encoded, e.g. "cafÃ©" -> "café", "donâ€™t" -> "don’t", "Ã¼ber" -> "über".
// A run is rewritten only when the characters map back to bytes that form one valid multi-byte
// UTF-8 sequence (a lead byte U+00C2..U+00F4 followed by the right number of continuation bytes),
// so correct Latin-1 text such as "Ã la carte" or "naïve" is left alone. Applied twice at most, for
// text that went through the mistake twice.
#pragma once

#include <string>
#include <string_view>

namespace suite::filter {

// Appends the repaired text to `out`; returns the number of sequences repaired.
size_t fix_mojibake(std::string_view text, std::string& out);

// Cheap test: can `text` contain mojibake at all (it needs a character U+00C2..U+00F4)?
bool may_contain_mojibake(std::string_view text);

}  // namespace suite::filter
