// The GPT-2 pre-tokenizer: a hand-written scanner equivalent to the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (spec §1.4). Works on UTF-8 bytes, no backtracking and no recursion, so any input length
// is fine. Pieces partition the text exactly. Input should be valid UTF-8 (see
// common/unicode/utf8.h to repair it); an invalid byte is treated as one "other" character.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace suite::bpe {

// End offset of the piece that starts at pos (requires pos < text.size()).
size_t next_piece_end(std::string_view text, size_t pos);

// Calls f(std::string_view piece) for each piece of text, in order.
template <class F>
void for_each_piece(std::string_view text, F&& f) {
  for (size_t i = 0; i < text.size();) {
    size_t j = next_piece_end(text, i);
    f(text.substr(i, j - i));
    i = j;
  }
}

std::vector<std::string_view> split_pieces(std::string_view text);

}  // namespace suite::bpe
