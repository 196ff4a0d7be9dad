// Shared test helpers: the vendored GPT-2 model (loaded once) and golden-file readers.
// Paths are relative to the repository root, where `make unit-test` runs the tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/bpe_model.h"

namespace suite::bpe::test {

inline const char* kVocabPath = "data/gpt2/vocab.json";
inline const char* kMergesPath = "data/gpt2/merges.txt";

const std::shared_ptr<const BpeModel>& gpt2_model();

std::string read_file(const std::string& path);

// Decompresses a whole .zst file with libzstd's streaming API.
std::string read_zstd_file(const std::string& path);

struct TrickyCase {
  std::string text;
  std::vector<TokenId> ids;
};
std::vector<TrickyCase> read_tricky_cases();

// The "text" field of every line of the fortunes corpus, in order.
std::vector<std::string> read_fortunes();

}  // namespace suite::bpe::test
