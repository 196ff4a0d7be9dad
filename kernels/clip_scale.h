// The gradient clipping factor, shared by the host's end of a step (train/backend/backend.cpp)
// and the device's (kernels/step_end.cu), so that both paths clip with the same bits.
#pragma once

#include "kernels/host_device.h"

namespace gpt {

// Scale that clipping folds into the optimizer: 1 when the norm is within clip (or clip <= 0),
// else Megatron's clip_grad_norm_fp32 factor clip / (norm + 1e-6).
GPT_HOST_DEVICE inline float clip_scale(float grad_norm, float clip_grad) {
  if (clip_grad <= 0.0f || !(grad_norm > clip_grad)) return 1.0f;
#ifdef __CUDA_ARCH__
  return __fdiv_rn(clip_grad, __fadd_rn(grad_norm, 1e-6f));  // IEEE, whatever the fast-math flags
#else
  return clip_grad / (grad_norm + 1e-6f);
#endif
}

}  // namespace gpt
