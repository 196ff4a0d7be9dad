#include "train/model/init.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "train/model/rng.h"

namespace gpt {
namespace {

// out[i] = std * normal() of the stream `key`, element i from its draws 2i and 2i + 1: the values
// do not depend on how many threads fill the pieces (a billion-parameter model's Box-Muller
// normals take a minute on one core).
void fill_normal(float* out, size_t n, uint64_t key, double std) {
  constexpr size_t kPiece = size_t(1) << 20;
  auto fill = [&](size_t begin, size_t end) {
    Rng rng = Rng::at(key, 2 * uint64_t(begin));
    for (size_t i = begin; i < end; ++i) out[i] = float(std * rng.normal());
  };
  const size_t pieces = (n + kPiece - 1) / kPiece;
  const size_t threads = std::min<size_t>(pieces, std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) return fill(0, n);
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (size_t p = t; p < pieces; p += threads) fill(p * kPiece, std::min(n, (p + 1) * kPiece));
    });
  for (std::thread& th : pool) th.join();
}

}  // namespace

void init_parameters(float* params, const ModelConfig& config, const ParamLayout& layout,
                     uint64_t seed) {
  const double out_std = config.init_method_std / std::sqrt(2.0 * config.num_layers);
  std::vector<float> whole;  // a sharded tensor's global values
  for (const TensorInfo& t : layout.tensors()) {
    float* p = params + t.offset;
    switch (t.kind) {
      case ParamKind::kBias:
        for (size_t i = 0; i < t.numel; ++i) p[i] = 0.0f;
        break;
      case ParamKind::kNorm: {
        const bool is_weight = t.name.ends_with(".weight");
        for (size_t i = 0; i < t.numel; ++i) p[i] = is_weight ? 1.0f : 0.0f;
        break;
      }
      case ParamKind::kWeight:
      case ParamKind::kEmbedding: {
        const uint64_t key = stream_key(seed, 0x1417, uint64_t(t.global_index));
        const double std = t.output_layer ? out_std : config.init_method_std;
        const bool sharded = t.numel != t.global_numel;
        if (sharded) whole.resize(t.global_numel);
        float* out = sharded ? whole.data() : p;
        fill_normal(out, t.global_numel, key, std);
        if (sharded) layout.shard_of(t, whole.data(), p);
        break;
      }
    }
  }
}

}  // namespace gpt
