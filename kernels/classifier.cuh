// Softmax cross-entropy and its gradient (ops.h: fused_classifier).
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// losses[r] = logsumexp(logits[r, 0:V]) - logits[r, target]; if dlogits is not nullptr WRITES
// dlogits[r, i] = dloss·(softmax_i - [i == target]) for i < V and 0 for V <= i < Vp.
// dlogits may equal logits (in place). One block per row; padded columns never enter the softmax.
void fused_classifier(float* dlogits, float* losses, const float* logits, const int* targets,
                      float dloss, int B, int T, int V, int Vp);

// The --bf16 path: logits and dlogits [rows, Vp] in bf16 (fp32 arithmetic inside), the same
// contract otherwise; Vp must be a multiple of 8.
void fused_classifier_bf16(bf16* dlogits, float* losses, const bf16* logits, const int* targets,
                           float dloss, int rows, int V, int Vp);

// *mean = (sum of x[0:n] in double, fixed order) / n, on the device: the micro-batch loss without
// a host round trip until the caller copies the one value back.
void mean_to_device(float* mean, const float* x, int n);

}  // namespace gpt::cuda
