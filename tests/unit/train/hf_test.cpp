// Hugging Face export / import round trip and layout (Conv1D transposes, unpadded vocabulary).
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>

#include "common/cli/error.h"
#include "tests/unit/train/gradcheck.h"
#include "tests/unit/train/train_helpers.h"
#include "train/model/hf.h"

TEST_CASE("export then import gives the same parameters (padded rows zero)") {
  gpt::ModelConfig c;
  c.num_layers = 2;
  c.hidden_size = 8;
  c.num_heads = 2;
  c.ffn_hidden_size = 32;
  c.seq_length = 4;
  c.max_position_embeddings = 6;
  c.vocab_size = 10;
  c.padded_vocab_size = 128;
  gpt::ParamLayout l(c);
  auto p = gradcheck::randn(l.total(), 3);
  train_test::TempDir dir("gpt-train-hf");
  gpt::export_hf(dir / "m", c, l, p.data());
  std::vector<float> q(l.total());
  gpt::load_hf(dir / "m", c, l, q.data());
  for (size_t i = 0; i < l.total(); ++i) {
    const bool padded = i >= l.wte() + 10 * 8 && i < l.wte() + 128 * 8;
    CHECK(q[i] == (padded ? 0.0f : p[i]));
  }
  // c_attn.weight of layer 0 is stored [in, out]: element (i=1, o=2) is our qkv_w[2][1]
  std::ifstream f(dir / "m/model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  uint64_t hlen;
  std::memcpy(&hlen, bytes.data(), 8);
  const std::string header = bytes.substr(8, hlen);
  CHECK(header.find("\"transformer.wte.weight\":{\"dtype\":\"F32\",\"shape\":[10,8]") !=
        std::string::npos);
  CHECK(header.find("\"transformer.h.0.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[8,24]") !=
        std::string::npos);
  CHECK(header.find("\"transformer.h.1.mlp.c_proj.weight\":{\"dtype\":\"F32\",\"shape\":[32,8]") !=
        std::string::npos);
  // another shape is refused, naming the field
  c.num_layers = 3;
  gpt::ParamLayout l3(c);
  std::vector<float> r(l3.total());
  CHECK_THROWS_WITH_AS(gpt::load_hf(dir / "m", c, l3, r.data()),
                       doctest::Contains("--num-layers: Hugging Face 2, this run 3"),
                       suite::ToolError);
}
