#include "kernels/encoder.cuh"

#include <cstdint>

#include <cub/device/device_radix_sort.cuh>

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

__global__ void iota_kernel(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i;
}

// One block per sorted position; only the first position of each token's run does the work.
__global__ void wte_backward_kernel(float* dwte, const float* dout, const int* tokens,
                                    const int* rows, int BT, int C) {
  const int i = blockIdx.x;
  const int tok = tokens[i];
  if (i > 0 && tokens[i - 1] == tok) return;
  int end = i + 1;
  while (end < BT && tokens[end] == tok) ++end;
  float* dst = dwte + size_t(tok) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = dst[c];
    for (int j = i; j < end; ++j) acc += dout[size_t(rows[j]) * C + c];
    dst[c] = acc;
  }
}

__global__ void wpe_backward_kernel(float* dwpe, const float* dout, int B, int T, int C) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(T) * C) return;
  float acc = dwpe[i];
  for (int b = 0; b < B; ++b) acc += dout[size_t(b) * T * C + i];
  dwpe[i] = acc;
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

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C) {
  const int BT = B * T;
  if (BT == 0 || C == 0) return;
  Scratch<int> rows_in(BT), rows(BT), tokens(BT);
  iota_kernel<<<ceil_div(BT, 256), 256, 0, stream()>>>(rows_in, BT);
  GPT_CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  GPT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, inp, tokens.get(),
                                                 rows_in.get(), rows.get(), BT, 0, 32, stream()));
  Scratch<unsigned char> temp(temp_bytes);
  GPT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, inp, tokens.get(),
                                                 rows_in.get(), rows.get(), BT, 0, 32, stream()));
  wte_backward_kernel<<<BT, 256, 0, stream()>>>(dwte, dout, tokens, rows, BT, C);
  GPT_CUDA_CHECK_LAUNCH();
  wpe_backward_kernel<<<ceil_div(size_t(T) * C, 256), 256, 0, stream()>>>(dwpe, dout, B, T, C);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
