// GPT-2's bytes<->unicode map (spec §1.5): every byte gets a printable, non-whitespace
// stand-in character so that token strings in vocab.json / merges.txt are readable text.
// Printable bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF stand for themselves; the other 68 bytes,
// in increasing order, map to U+0100..U+0143 (space -> U+0120 'Ġ', '\n' -> U+010A 'Ċ').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace suite::bpe {

// The stand-in code point of byte b.
char32_t byte_to_char(uint8_t b);

// The byte a stand-in code point represents, or -1 if cp is not a stand-in.
int char_to_byte(char32_t cp);

// The byte at position i (0..255) of the stand-in alphabet sorted by code point. This is the
// order of GPT-2's ids 0..255 and of HF's trainer alphabet: byte_in_char_order(0) = '!',
// byte_in_char_order(188) = 0x00, byte_in_char_order(220) = ' '.
uint8_t byte_in_char_order(int i);

// Raw bytes -> their stand-in text (UTF-8), as written in vocab.json / merges.txt.
std::string bytes_to_token_text(std::string_view bytes);

// Stand-in text -> raw bytes appended to out. Returns false if the text is not valid UTF-8
// or holds a character that is not a stand-in (out then holds a partial result).
bool token_text_to_bytes(std::string_view text, std::string& out);

}  // namespace suite::bpe
