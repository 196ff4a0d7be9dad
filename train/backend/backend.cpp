#include "train/backend/backend.h"

#include "common/cli/error.h"

namespace gpt {

std::unique_ptr<Backend> make_backend(const ModelConfig& config, const ParamLayout& layout,
                                      const BackendOptions& options) {
  if (options.device == "cpu") return make_cpu_backend(config, layout, options);
  if (options.device == "cuda") {
#ifdef GPT_HAVE_CUDA
    return make_cuda_backend(config, layout, options);
#else
    throw suite::ToolError("--device cuda: this gpt-train was built without CUDA (nvcc not found "
                           "or NO_CUDA=1); rebuild with the CUDA toolkit or use --device cpu");
#endif
  }
  throw suite::UsageError("--device must be cpu or cuda, not '" + options.device + "'");
}

}  // namespace gpt
