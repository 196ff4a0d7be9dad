#include "train/model/hf.h"

#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include "common/cli/error.h"
#include "train/model/checkpoint_io.h"

namespace gpt {
namespace fs = std::filesystem;
namespace {

// One HF tensor and how it maps onto our layout: `transpose` for Conv1D weights, `rows` limits the
// copied rows of ours (unpadded vocabulary).
struct Mapping {
  std::string hf_name;
  size_t our_offset;
  std::vector<int64_t> hf_shape;
  bool transpose;
};

std::vector<Mapping> mappings(const ModelConfig& c, const ParamLayout& l) {
  const int64_t C = c.hidden_size, F = c.ffn_hidden_size;
  std::vector<Mapping> m;
  m.push_back({"transformer.wte.weight", l.wte(), {c.vocab_size, C}, false});
  m.push_back({"transformer.wpe.weight", l.wpe(), {c.max_position_embeddings, C}, false});
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    const LayerOffsets& o = l.layer(i);
    m.push_back({p + "ln_1.weight", o.ln1_w, {C}, false});
    m.push_back({p + "ln_1.bias", o.ln1_b, {C}, false});
    m.push_back({p + "attn.c_attn.weight", o.qkv_w, {C, 3 * C}, true});
    m.push_back({p + "attn.c_attn.bias", o.qkv_b, {3 * C}, false});
    m.push_back({p + "attn.c_proj.weight", o.proj_w, {C, C}, true});
    m.push_back({p + "attn.c_proj.bias", o.proj_b, {C}, false});
    m.push_back({p + "ln_2.weight", o.ln2_w, {C}, false});
    m.push_back({p + "ln_2.bias", o.ln2_b, {C}, false});
    m.push_back({p + "mlp.c_fc.weight", o.fc_w, {C, F}, true});
    m.push_back({p + "mlp.c_fc.bias", o.fc_b, {F}, false});
    m.push_back({p + "mlp.c_proj.weight", o.fc2_w, {F, C}, true});
    m.push_back({p + "mlp.c_proj.bias", o.fc2_b, {C}, false});
  }
  m.push_back({"transformer.ln_f.weight", l.lnf_w(), {C}, false});
  m.push_back({"transformer.ln_f.bias", l.lnf_b(), {C}, false});
  return m;
}

size_t numel(const std::vector<int64_t>& s) {
  size_t n = 1;
  for (auto d : s) n *= size_t(d);
  return n;
}

// HF [rows, cols] from ours: ours is [cols, rows] when transposed.
void to_hf(const Mapping& m, const float* ours, float* hf) {
  if (!m.transpose) {
    std::memcpy(hf, ours, numel(m.hf_shape) * sizeof(float));
    return;
  }
  const int64_t in = m.hf_shape[0], out = m.hf_shape[1];
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) hf[i * out + o] = ours[o * in + i];
}

void from_hf(const Mapping& m, const float* hf, float* ours) {
  if (!m.transpose) {
    std::memcpy(ours, hf, numel(m.hf_shape) * sizeof(float));
    return;
  }
  const int64_t in = m.hf_shape[0], out = m.hf_shape[1];
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) ours[o * in + i] = hf[i * out + o];
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  if (!f) throw suite::ToolError(path.string(), "cannot write");
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal
      float f = std::ldexp(float(man), -24);
      std::memcpy(&bits, &f, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

void export_hf(const std::string& dir, const ModelConfig& c, const ParamLayout& l,
               const float* params) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw suite::ToolError(dir, "cannot create directory: " + ec.message());
  const auto maps = mappings(c, l);
  std::ostringstream h;
  h << "{\"__metadata__\":{\"format\":\"pt\"}";
  size_t offset = 0;
  for (const auto& m : maps) {
    const size_t bytes = numel(m.hf_shape) * sizeof(float);
    h << ",\"" << m.hf_name << "\":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < m.hf_shape.size(); ++i) h << (i ? "," : "") << m.hf_shape[i];
    h << "],\"data_offsets\":[" << offset << "," << offset + bytes << "]}";
    offset += bytes;
  }
  h << "}";
  std::string header = h.str();
  while (header.size() % 8) header += ' ';  // safetensors pads the header to 8 bytes
  const uint64_t hlen = header.size();
  std::string out(reinterpret_cast<const char*>(&hlen), 8);
  out += header;
  out.reserve(out.size() + offset);
  std::vector<float> buf;
  for (const auto& m : maps) {
    buf.resize(numel(m.hf_shape));
    to_hf(m, params + m.our_offset, buf.data());
    out.append(reinterpret_cast<const char*>(buf.data()), buf.size() * sizeof(float));
  }
  write_file(fs::path(dir) / "model.safetensors", out);

  std::ostringstream j;
  j << "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
    << "  \"vocab_size\": " << c.vocab_size << ",\n  \"n_positions\": "
    << c.max_position_embeddings << ",\n  \"n_ctx\": " << c.max_position_embeddings
    << ",\n  \"n_embd\": " << c.hidden_size << ",\n  \"n_layer\": " << c.num_layers
    << ",\n  \"n_head\": " << c.num_heads << ",\n  \"n_inner\": " << c.ffn_hidden_size
    << ",\n  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
    << "  \"initializer_range\": " << c.init_method_std << ",\n"
    << "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
    << "  \"bos_token_id\": " << c.vocab_size - 1 << ",\n  \"eos_token_id\": "
    << c.vocab_size - 1 << ",\n  \"tie_word_embeddings\": true,\n"
    << "  \"torch_dtype\": \"float32\"\n}\n";
  write_file(fs::path(dir) / "config.json", j.str());
}

void load_hf(const std::string& dir, const ModelConfig& c, const ParamLayout& l, float* params) {
  const fs::path cfg_path = fs::path(dir) / "config.json";
  simdjson::padded_string cfg_text;
  if (simdjson::padded_string::load(cfg_path.string()).get(cfg_text))
    throw suite::ToolError(cfg_path.string(), "Hugging Face config.json not found");
  simdjson::dom::parser parser;
  simdjson::dom::element cfg;
  if (parser.parse(cfg_text).get(cfg))
    throw suite::ToolError(cfg_path.string(), "not valid JSON");
  std::string diff;
  auto expect = [&](const char* key, const char* flag, int64_t ours, int64_t fallback = -1) {
    int64_t v;
    if (cfg[key].get(v)) {
      if (fallback < 0) throw suite::ToolError(cfg_path.string(), std::string("lacks ") + key);
      v = fallback;
    }
    if (v != ours)
      diff += (diff.empty() ? "" : "; ") + std::string(flag) + ": Hugging Face " +
              std::to_string(v) + ", this run " + std::to_string(ours);
  };
  expect("n_layer", "--num-layers", c.num_layers);
  expect("n_embd", "--hidden-size", c.hidden_size);
  expect("n_head", "--num-attention-heads", c.num_heads);
  expect("n_positions", "--max-position-embeddings", c.max_position_embeddings);
  expect("vocab_size", "vocabulary size", c.vocab_size);
  {
    int64_t inner;
    if (!cfg["n_inner"].get(inner))
      expect("n_inner", "--ffn-hidden-size", c.ffn_hidden_size);
    else if (c.ffn_hidden_size != 4 * c.hidden_size)
      diff += (diff.empty() ? "" : "; ") + std::string("--ffn-hidden-size: Hugging Face ") +
              std::to_string(4 * c.hidden_size) + ", this run " +
              std::to_string(c.ffn_hidden_size);
  }
  if (!diff.empty())
    throw suite::ToolError(dir, "Hugging Face model has another shape (" + diff + ")");

  const fs::path st_path = fs::path(dir) / "model.safetensors";
  std::ifstream f(st_path, std::ios::binary);
  if (!f) throw suite::ToolError(st_path.string(), "model.safetensors not found");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  uint64_t hlen = 0;
  if (bytes.size() < 8) throw suite::ToolError(st_path.string(), "truncated safetensors file");
  std::memcpy(&hlen, bytes.data(), 8);
  if (8 + hlen > bytes.size()) throw suite::ToolError(st_path.string(), "truncated header");
  simdjson::dom::parser hparser;
  simdjson::dom::object header;
  if (hparser.parse(bytes.data() + 8, hlen).get(header))
    throw suite::ToolError(st_path.string(), "safetensors header is not a JSON object");
  const char* data = bytes.data() + 8 + hlen;
  const size_t data_size = bytes.size() - 8 - hlen;

  std::fill(params, params + l.total(), 0.0f);
  std::vector<float> buf;
  for (const auto& m : mappings(c, l)) {
    simdjson::dom::object t;
    if (header[m.hf_name].get(t) &&
        header[m.hf_name.substr(std::strlen("transformer."))].get(t))
      throw suite::ToolError(st_path.string(), "tensor " + m.hf_name + " is missing");
    std::string_view dtype;
    simdjson::dom::array shape, offs;
    if (t["dtype"].get(dtype) || t["shape"].get(shape) || t["data_offsets"].get(offs))
      throw suite::ToolError(st_path.string(), "tensor " + m.hf_name + " has a bad entry");
    std::vector<int64_t> dims;
    for (auto d : shape) dims.push_back(int64_t(d));
    if (dims != m.hf_shape)
      throw suite::ToolError(st_path.string(), "tensor " + m.hf_name + " has another shape");
    const uint64_t b = uint64_t(offs.at(0)), e = uint64_t(offs.at(1));
    const size_t n = numel(dims);
    const size_t elem = dtype == "F32" ? 4 : (dtype == "F16" || dtype == "BF16") ? 2 : 0;
    if (elem == 0)
      throw suite::ToolError(st_path.string(), "tensor " + m.hf_name + " has unsupported dtype " +
                                                   std::string(dtype));
    if (e > data_size || e - b != n * elem)
      throw suite::ToolError(st_path.string(), "tensor " + m.hf_name + " has bad data offsets");
    buf.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const char* p = data + b + i * elem;
      if (elem == 4) {
        std::memcpy(&buf[i], p, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, p, 2);
        if (dtype == "F16") {
          buf[i] = half_to_float(h);
        } else {
          const uint32_t bits = uint32_t(h) << 16;
          std::memcpy(&buf[i], &bits, 4);
        }
      }
    }
    from_hf(m, buf.data(), params + m.our_offset);
  }
}

void export_hf_from_checkpoint(const std::string& ckpt_dir, const std::string& dir) {
  const ckptio::Reader reader(ckpt_dir);  // the weights only, not the AdamW moments
  const ModelConfig& c = reader.meta().model;
  const ParamLayout layout(c);
  if (layout.total() != reader.num_params())
    throw suite::ToolError(ckpt_dir, "checkpoint holds " + std::to_string(reader.num_params()) +
                                         " parameters, its model shape " +
                                         std::to_string(layout.total()));
  std::vector<float> params(layout.total());
  reader.read(0, 0, params.size(), params.data());
  export_hf(dir, c, layout, params.data());
}

}  // namespace gpt
