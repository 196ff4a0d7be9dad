// init_parameters fills big tensors in pieces on several threads; every value is still the one
// stream of its tensor, drawn in order, so all layouts and machines start from the same weights.
#include <doctest/doctest.h>

#include <vector>

#include "train/model/init.h"
#include "train/model/layout.h"
#include "train/model/rng.h"

TEST_CASE("init: a tensor of several pieces holds its stream's normals in order") {
  gpt::ModelConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 256;
  cfg.num_heads = 4;
  cfg.ffn_hidden_size = 1024;
  cfg.seq_length = 16;
  cfg.max_position_embeddings = 16;
  cfg.vocab_size = 9000;
  cfg.padded_vocab_size = 9088;  // wte: 2.3M values, three pieces of 2^20
  const gpt::ParamLayout layout(cfg);
  std::vector<float> params(layout.total());
  gpt::init_parameters(params.data(), cfg, layout, 1234);
  bool found = false;
  for (const gpt::TensorInfo& t : layout.tensors()) {
    if (t.kind != gpt::ParamKind::kEmbedding || t.numel < (size_t(2) << 20)) continue;
    found = true;
    gpt::Rng rng(gpt::stream_key(1234, 0x1417, uint64_t(t.global_index)));
    size_t differ = 0;
    for (size_t i = 0; i < t.numel; ++i)
      differ += params[t.offset + i] != float(cfg.init_method_std * rng.normal());
    CHECK(differ == 0);
  }
  CHECK(found);
}

TEST_CASE("rng: Rng::at is the stream after that many draws") {
  gpt::Rng a(42);
  for (int i = 0; i < 7; ++i) a.next();
  gpt::Rng b = gpt::Rng::at(42, 7);
  CHECK(a.next() == b.next());
  CHECK(a.normal() == b.normal());
}
