// The bf16 entry points of flash_attention.cuh (the wgmma kernels of kernels/sm90/ first where
// they apply, else the generic kernels of flash_attention_kernels.cuh) and the shape rules.
#include <cmath>
#include <cstdint>

#include "kernels/column_sum.cuh"
#include "kernels/flash_attention.cuh"
#include "kernels/flash_attention_kernels.cuh"
#include "kernels/matmul.cuh"
#include "kernels/sm90/capability.cuh"
#include "kernels/sm90/flash_attention_sm90.cuh"

namespace gpt::cuda {

bool flash_attention_uses_hopper(int C, int NH) {
  return flash_attention_supported(C, NH) && (C / NH == 64 || C / NH == 96 || C / NH == 128) &&
         kernel_config().sm90_attention && sm90_available();
}

bool flash_attention_supported(int C, int NH) { return flash_shape_ok(C, NH); }

void flash_attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH,
                             float dropout, DropKey key, HeadRange heads) {
  if (size_t(B) * T * C == 0) return;
  const int hs = C / NH;
  const float sl2 = float(1.4426950408889634 / std::sqrt(double(hs)));
  const bool v16 = hs % 8 == 0 && flash::aligned16(qkv);
  if (v16 && B * NH <= 65535 && flash_attention_uses_hopper(C, NH)) {
    flash_sm90_forward(out, lse, qkv, B, T, C, NH, sl2, dropout, key, heads);
    return;
  }
  flash::forward(out, lse, qkv, B, T, C, NH, dropout, key, heads);
}

void flash_attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out,
                              const float* lse, int B, int T, int C, int NH, float* dbias,
                              float dropout, DropKey key, HeadRange heads) {
  if (size_t(B) * T * C == 0) return;
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(double(hs));
  const float sl2 = float(1.4426950408889634 * scale);
  const bool v16 =
      hs % 8 == 0 && flash::aligned16(qkv) && flash::aligned16(dout) && flash::aligned16(out);
  if (v16 && B * NH <= 65535 && flash_attention_uses_hopper(C, NH)) {  // grid.y = B·NH
    // The bias sums in the kernels that store dqkv (T % 64 == 0: each warpgroup's rows are one
    // of bias_grad's 64-row chunks), the same bits as bias_grad over the stored dqkv.
    const bool fused = dbias && T % 64 == 0;
    Scratch<float> partial(fused ? size_t(B) * T / 64 * 3 * C : 0);
    // Scratch(0) is a 1-byte allocation, not null: without the sums the kernels get null.
    flash_sm90_backward(dqkv, fused ? partial.get() : nullptr, dout, qkv, out, lse, B, T, C, NH,
                        sl2, float(scale), dropout, key, heads);
    if (fused)
      column_sum_finish<1>(ColumnTargets<1>{{dbias}}, std::move(partial), B * T / 64, 3 * C);
    else if (dbias)
      bias_grad(dbias, dqkv, B * T, 3 * C);
    return;
  }
  flash::backward(dqkv, dout, qkv, out, lse, B, T, C, NH, dropout, key, heads);
  if (dbias) bias_grad(dbias, dqkv, B * T, 3 * C);
}

}  // namespace gpt::cuda
