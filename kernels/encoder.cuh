// Token + position embedding (ops.h: encoder_forward / encoder_backward).
#pragma once

#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// out[b,t,:] = wte[inp[b,t], :] + wpe[t, :]
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C);
// dwte[inp[b,t], :] += dout[b,t,:]; dwpe[t, :] += sum_b dout[b,t,:].
// Deterministic and bit-identical to the CPU reference: positions are radix-sorted by token
// (stable, so each token's positions stay in (b,t) order) and one block per distinct token adds
// its rows in that order; dwpe is one thread per (t, c) adding over b in order.
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C);

}  // namespace gpt::cuda
