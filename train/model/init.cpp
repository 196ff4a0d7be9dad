#include "train/model/init.h"

#include <cmath>

#include "train/model/rng.h"

namespace gpt {

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
        Rng rng(stream_key(seed, 0x1417, uint64_t(t.global_index)));
        const double std = t.output_layer ? out_std : config.init_method_std;
        const bool sharded = t.numel != t.global_numel;
        if (sharded) whole.resize(t.global_numel);
        float* out = sharded ? whole.data() : p;
        for (size_t i = 0; i < t.global_numel; ++i) out[i] = float(std * rng.normal());
        if (sharded) layout.shard_of(t, whole.data(), p);
        break;
      }
    }
  }
}

}  // namespace gpt
