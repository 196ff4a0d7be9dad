// The fp16 entry points of flash_attention.cuh: the generic kernels of
// flash_attention_kernels.cuh with fp16 operands (a file of its own so that the two element
// types' instantiations compile in parallel).
#include "kernels/flash_attention.cuh"
#include "kernels/flash_attention_kernels.cuh"

namespace gpt::cuda {

void flash_attention_forward(fp16* out, float* lse, const fp16* qkv, int B, int T, int C, int NH,
                             float dropout, DropKey key, HeadRange heads) {
  flash::forward(out, lse, qkv, B, T, C, NH, dropout, key, heads);
}

void flash_attention_backward(fp16* dqkv, const fp16* dout, const fp16* qkv, const fp16* out,
                              const float* lse, int B, int T, int C, int NH, float dropout,
                              DropKey key, HeadRange heads) {
  flash::backward(dqkv, dout, qkv, out, lse, B, T, C, NH, dropout, key, heads);
}

}  // namespace gpt::cuda
