#include "common/tokenizer/bpe_encode_job.h"

#include <memory>

#include "common/cli/error.h"
#include "common/io/output.h"
#include "common/jsonl/jsonl_runner.h"
#include "common/tokenizer/bpe_model.h"

namespace suite::bpe {

void run_bpe_encode(const CommonOptions& options, const BpeEncodeConfig& config) {
  auto model = BpeModel::load(config.vocab_file, config.merge_file);
  if (config.codec.append_eod && !model->eot_token())
    throw ToolError(config.vocab_file, "--append-eod: the vocabulary has no <|endoftext|> token");
  CodecOptions codec = config.codec;
  codec.keys = options.json_keys;
  auto prototype = std::make_shared<const JsonlCodec>(model, codec);
  auto out = open_output(options.output);
  run_jsonl(options, [prototype] { return std::make_unique<JsonlCodec>(*prototype); }, write_to(*out));
  out->close();
}

}  // namespace suite::bpe
