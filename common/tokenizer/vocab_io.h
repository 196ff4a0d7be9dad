// Reading and writing GPT-2 / HF byte-level BPE files (spec §1.6).
//   vocab.json: a JSON object {token text: id}, token text in the stand-in alphabet
//     (common/tokenizer/byte_map.h); raw UTF-8 and \uXXXX escapes (with surrogate pairs) are
//     both accepted; ids must be exactly 0..n-1.
//   merges.txt: optional "#version..." first line, then "left right" per line in rank order.
// Malformed input throws suite::ToolError(location(file, line), what).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/tokenizer/bpe_model.h"

namespace suite::bpe {

// vocab.json -> tokens[id] as raw bytes.
std::vector<std::string> parse_vocab_json(std::string_view content, std::string_view file_name);
std::vector<std::string> read_vocab_json(const std::string& path);

// merges.txt -> (left id, right id) in rank order. Both sides and their concatenation must be
// tokens of the vocabulary (tokens[id] = raw bytes).
// `vocab_name` names the vocabulary's file in the message when a merge does not belong to it.
std::vector<std::pair<TokenId, TokenId>> parse_merges_txt(std::string_view content, std::string_view file_name,
                                                          const std::vector<std::string>& tokens,
                                                          std::string_view vocab_name = "");
std::vector<std::pair<TokenId, TokenId>> read_merges_txt(const std::string& path,
                                                         const std::vector<std::string>& tokens,
                                                         std::string_view vocab_name = "");

// Every multi-byte token of the vocabulary that two reachable tokens (bytes or merge results) make
// up must be the result of some merge, as in any vocabulary trained together with its merges, unless
// it looks like a special token (<...>, [...]): a vocabulary from one training run beside the merges
// of another (a smaller one) is refused, naming both files.
void check_vocab_matches_merges(const std::vector<std::string>& tokens,
                                std::span<const std::pair<TokenId, TokenId>> merges, std::string_view vocab_name,
                                std::string_view merges_name);

// OpenAI's encoder.json layout: ids in order, ASCII only (\uXXXX escapes), ", " and ": "
// separators, no trailing newline. GPT-2's own vocabulary round-trips byte for byte.
std::string format_vocab_json(const std::vector<std::string>& tokens);
// "#version: 0.2" then one "left right" line per merge, each ending in '\n'.
std::string format_merges_txt(const std::vector<std::string>& tokens, std::span<const Merge> merges);
std::string format_merges_txt(const std::vector<std::string>& tokens,
                              std::span<const std::pair<TokenId, TokenId>> merges);

// DIR/vocab.json and DIR/merges.txt as one pair (common/io/atomic_file.h commit_together): a run
// killed between the two renames leaves vocab.json without merges.txt, never a mismatched pair.
void write_vocab_and_merges(const std::string& dir, const std::vector<std::string>& tokens,
                            std::span<const std::pair<TokenId, TokenId>> merges);

// Write a file atomically enough for a tool: throws ToolError on I/O failure.
void write_text_file(const std::string& path, std::string_view content);
std::string read_text_file(const std::string& path);

// Token bytes as stand-in text, for messages.
std::string bytes_to_display(std::string_view bytes);

}  // namespace suite::bpe
