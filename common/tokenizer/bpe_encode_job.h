// bpe-encode's job: every document's --json-keys fields encoded to token ids, or decoded back
// (jsonl_codec.h holds the per-document work and the field layout).
#pragma once

#include <string>

#include "common/cli/options.h"
#include "common/tokenizer/jsonl_codec.h"

namespace suite::bpe {

struct BpeEncodeConfig {
  std::string vocab_file, merge_file;
  CodecOptions codec;  // its keys come from --json-keys
};

void run_bpe_encode(const CommonOptions& options, const BpeEncodeConfig& config);

}  // namespace suite::bpe
