#include "tests/unit/tokenizer/gpt2_fixture.h"

#include <simdjson.h>
#include <zstd.h>

#include <stdexcept>

#include "common/tokenizer/vocab_io.h"

namespace suite::bpe::test {

const std::shared_ptr<const BpeModel>& gpt2_model() {
  static const std::shared_ptr<const BpeModel> model = BpeModel::load(kVocabPath, kMergesPath);
  return model;
}

std::string read_file(const std::string& path) { return read_text_file(path); }

std::string read_zstd_file(const std::string& path) {
  std::string in = read_file(path), out;
  ZSTD_DStream* ds = ZSTD_createDStream();
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  size_t ret = 1;
  while (input.pos < input.size) {
    ZSTD_outBuffer output{buf.data(), buf.size(), 0};
    ret = ZSTD_decompressStream(ds, &output, &input);
    if (ZSTD_isError(ret)) {
      ZSTD_freeDStream(ds);
      throw std::runtime_error(path + ": " + ZSTD_getErrorName(ret));
    }
    out.append(buf.data(), output.pos);
  }
  ZSTD_freeDStream(ds);
  if (ret != 0) throw std::runtime_error(path + ": truncated zstd frame");
  return out;
}

std::vector<TrickyCase> read_tricky_cases() {
  simdjson::ondemand::parser parser;
  simdjson::padded_string json = simdjson::padded_string::load("tests/data/golden/gpt2-tricky.jsonl");
  simdjson::ondemand::document_stream docs = parser.iterate_many(json);
  std::vector<TrickyCase> cases;
  for (auto doc : docs) {
    TrickyCase c;
    c.text = std::string(std::string_view(doc["text"].get_string()));
    for (auto v : doc["ids"].get_array()) c.ids.push_back(static_cast<TokenId>(uint64_t(v.get_uint64())));
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<std::string> read_fortunes() {
  std::string all = read_zstd_file("tests/data/golden/fortunes-en.jsonl.zst");
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(all);
  simdjson::ondemand::document_stream docs = parser.iterate_many(json);
  std::vector<std::string> texts;
  for (auto doc : docs) texts.emplace_back(std::string_view(doc["text"].get_string()));
  return texts;
}

}  // namespace suite::bpe::test
