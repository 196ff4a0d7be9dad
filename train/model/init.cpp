#include "train/model/init.h"

#include <cmath>

#include "train/model/rng.h"

namespace gpt {

void init_parameters(float* params, const ModelConfig& config, const ParamLayout& layout,
                     uint64_t seed) {
  const double out_std = config.init_method_std / std::sqrt(2.0 * config.num_layers);
  const auto& tensors = layout.tensors();
  for (size_t ti = 0; ti < tensors.size(); ++ti) {
    const TensorInfo& t = tensors[ti];
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
        Rng rng(stream_key(seed, 0x1417, ti));
        const double std = t.output_layer ? out_std : config.init_method_std;
        for (size_t i = 0; i < t.numel; ++i) p[i] = float(std * rng.normal());
        break;
      }
    }
  }
}

}  // namespace gpt
