#include "kernels/encoder.cuh"

#include <climits>
#include <cstdint>

#include "kernels/vocab_parallel.cuh"

namespace gpt::cuda {
namespace {

__global__ void encoder_forward_kernel(float* out, const int* inp, const float* wte,
                                       const float* wpe, int T, int C, size_t total) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const size_t bt = i / C, c = i % C;
  out[i] = wte[size_t(inp[bt]) * C + c] + wpe[(bt % T) * C + c];
}

// C % 4 == 0 and 16-byte aligned rows: four channels per thread, one 64-bit division per four
// elements instead of one per element.
__global__ void encoder_forward_vec_kernel(float4* out, const int* inp, const float4* wte,
                                           const float4* wpe, int T, int C4, size_t total4) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total4) return;
  const size_t bt = i / C4, c = i % C4;
  const float4 a = wte[size_t(inp[bt]) * C4 + c], p = wpe[(bt % T) * C4 + c];
  out[i] = make_float4(a.x + p.x, a.y + p.y, a.z + p.z, a.w + p.w);
}

}  // namespace

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C) {
  const size_t total = size_t(B) * T * C;
  if (total == 0) return;
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (C % 4 == 0 && aligned(out) && aligned(wte) && aligned(wpe)) {
    const size_t total4 = total / 4;
    encoder_forward_vec_kernel<<<ceil_div(total4, 256), 256, 0, stream()>>>(
        reinterpret_cast<float4*>(out), inp, reinterpret_cast<const float4*>(wte),
        reinterpret_cast<const float4*>(wpe), T, C / 4, total4);
  } else {
    encoder_forward_kernel<<<ceil_div(total, 256), 256, 0, stream()>>>(out, inp, wte, wpe, T, C,
                                                                         total);
  }
  GPT_CUDA_CHECK_LAUNCH();
}

// The vocabulary-parallel backward with the whole vocabulary on this rank: no token falls
// outside its rows.
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C) {
  vocab_embedding_backward(dwte, dwpe, dout, inp, B, T, C, 0, INT_MAX);
}

}  // namespace gpt::cuda
