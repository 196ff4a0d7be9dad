#include "kernels/adamw.cuh"

#include "kernels/master_split.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpt::cuda {
namespace {

struct AdamWArgs {
  float lr, beta1, beta2, eps, bc1, bc2, grad_scale;
};

// One parameter's update. Every rounding is spelled out (fmaf, __fmul_rn, ...), so the compiler
// cannot contract the expressions differently where this is inlined: the element and the 16-byte
// paths below give the same bits.
__device__ __forceinline__ void adamw_math(float& p, float& m, float& v, float grad,
                                           const AdamWArgs& a, float weight_decay) {
  const float g = __fmul_rn(grad, a.grad_scale);
  m = fmaf(a.beta1, m, __fmul_rn(1.0f - a.beta1, g));
  v = fmaf(a.beta2, v, __fmul_rn(__fmul_rn(1.0f - a.beta2, g), g));
  const float upd = __fdiv_rn(__fdiv_rn(m, a.bc1), __fadd_rn(__fsqrt_rn(__fdiv_rn(v, a.bc2)), a.eps));
  p = fmaf(-a.lr, fmaf(weight_decay, p, upd), p);  // p - lr·(upd + wd·p)
}

__device__ __forceinline__ void adamw_element(size_t i, float* params, bf16* params_h, float grad,
                                              float* m, float* v, const AdamWArgs& a,
                                              float weight_decay) {
  float p = params[i], mi = m[i], vi = v[i];
  adamw_math(p, mi, vi, grad, a, weight_decay);
  m[i] = mi;
  v[i] = vi;
  params[i] = p;
  if (params_h) params_h[i] = __float2bfloat16_rn(p);
}

// A split span (AdamWSpan::split_master): the parameter from and to its two halves.
__device__ __forceinline__ void adamw_split_element(size_t i, bf16* params_h, uint16_t* params_lo,
                                                    float grad, float* m, float* v,
                                                    const AdamWArgs& a, float weight_decay) {
  float p = __uint_as_float(join_master_bits(__bfloat16_as_ushort(params_h[i]), params_lo[i]));
  float mi = m[i], vi = v[i];
  adamw_math(p, mi, vi, grad, a, weight_decay);
  m[i] = mi;
  v[i] = vi;
  const MasterHalves h = split_master_bits(__float_as_uint(p));
  params_h[i] = __ushort_as_bfloat16(h.hi);
  params_lo[i] = h.lo;
}

__global__ void adamw_kernel(float* params, bf16* params_h, const float* grads, float* m, float* v,
                             size_t n, AdamWArgs a, float weight_decay) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    adamw_element(i, params, params_h, grads[i], m, v, a, weight_decay);
}

// Block b updates span b: four elements per thread and step (16-byte accesses) when the span's
// ends are multiples of 4, element by element otherwise; the same arithmetic either way. Two
// blocks per SM (at most 64 registers): with one 512-thread block per SM too few loads are in
// flight to reach the memory bandwidth.
__global__ void __launch_bounds__(512, 2)
    adamw_spans_kernel(float* params, bf16* params_h, const float* grads, float* m, float* v,
                       const AdamWSpan* spans, AdamWArgs a, float weight_decay,
                       const float* device_scale, const int* device_ok, uint16_t* params_lo) {
  if (device_scale) {
    if (!*device_ok) return;
    a.grad_scale = *device_scale;
  }
  const AdamWSpan sp = spans[blockIdx.x];
  const float wd = sp.decays ? weight_decay : 0.0f;
  // The span's gradient in bf16 (AdamWSpan::grad_bf16), else nullptr and fp32 in grads.
  const bf16* gh = sp.grad_bf16 ? reinterpret_cast<const bf16*>(grads) + sp.half_base : nullptr;
  auto load = [](const float* x, size_t i) { return *reinterpret_cast<const float4*>(x + i); };
  auto load_grad = [&](size_t i) { return gh ? load_bf16x4(gh + i) : load(grads, i); };
  const size_t stride = 4 * size_t(blockDim.x);
  if (sp.split_master) {
    uint16_t* lo_at = params_lo + sp.lo_shift;  // element i's low half: lo_at[i]
    if (sp.begin % 4 != 0 || sp.end % 4 != 0 || sp.lo_shift % 4 != 0) {
      for (size_t i = sp.begin + threadIdx.x; i < sp.end; i += blockDim.x)
        adamw_split_element(i, params_h, lo_at, gh ? __bfloat162float(gh[i]) : grads[i], m, v,
                            a, wd);
      return;
    }
    // Four elements per thread: the halves in 8-byte words, the rest as below.
    auto split4 = [&](size_t i, uint2 h4, uint2 l4, float4 g4, float4 m4, float4 v4) {
      const uint16_t* hh = reinterpret_cast<const uint16_t*>(&h4);
      const uint16_t* ll = reinterpret_cast<const uint16_t*>(&l4);
      const float* gg = &g4.x;
      float *mm = &m4.x, *vv = &v4.x;
      uint2 ho, lo;
      uint16_t* hw = reinterpret_cast<uint16_t*>(&ho);
      uint16_t* lw = reinterpret_cast<uint16_t*>(&lo);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        float p = __uint_as_float(join_master_bits(hh[k], ll[k]));
        adamw_math(p, mm[k], vv[k], gg[k], a, wd);
        const MasterHalves h = split_master_bits(__float_as_uint(p));
        hw[k] = h.hi;
        lw[k] = h.lo;
      }
      *reinterpret_cast<float4*>(m + i) = m4;
      *reinterpret_cast<float4*>(v + i) = v4;
      *reinterpret_cast<uint2*>(params_h + i) = ho;
      *reinterpret_cast<uint2*>(lo_at + i) = lo;
    };
    auto halves = [](const void* x, size_t i) {
      return *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(x) + i);
    };
    size_t i = sp.begin + 4 * size_t(threadIdx.x);
    for (; i + stride < sp.end; i += 2 * stride) {
      const size_t j = i + stride;
      const uint2 h0 = halves(params_h, i), l0 = halves(lo_at, i);
      const float4 g0 = load_grad(i), m0 = load(m, i), v0 = load(v, i);
      const uint2 h1 = halves(params_h, j), l1 = halves(lo_at, j);
      const float4 g1 = load_grad(j), m1 = load(m, j), v1 = load(v, j);
      split4(i, h0, l0, g0, m0, v0);
      split4(j, h1, l1, g1, m1, v1);
    }
    if (i < sp.end)
      split4(i, halves(params_h, i), halves(lo_at, i), load_grad(i), load(m, i), load(v, i));
    return;
  }
  if (sp.begin % 4 != 0 || sp.end % 4 != 0) {
    for (size_t i = sp.begin + threadIdx.x; i < sp.end; i += blockDim.x)
      adamw_element(i, params, params_h, gh ? __bfloat162float(gh[i]) : grads[i], m, v, a, wd);
    return;
  }
  // Two 16-byte groups per thread and pass (eight loads in flight, then the math, then the
  // stores), so that loads overlap. The same arithmetic per element as the other paths.
  auto update4 = [&](size_t i, float4 p, float4 g4, float4 m4, float4 v4) {
    float* pp = &p.x;
    const float* gg = &g4.x;
    float *mm = &m4.x, *vv = &v4.x;
#pragma unroll
    for (int k = 0; k < 4; ++k) adamw_math(pp[k], mm[k], vv[k], gg[k], a, wd);
    *reinterpret_cast<float4*>(m + i) = m4;
    *reinterpret_cast<float4*>(v + i) = v4;
    *reinterpret_cast<float4*>(params + i) = p;
    if (params_h) {
      __nv_bfloat162 h[2] = {__floats2bfloat162_rn(p.x, p.y), __floats2bfloat162_rn(p.z, p.w)};
      *reinterpret_cast<uint2*>(params_h + i) = *reinterpret_cast<uint2*>(h);
    }
  };
  size_t i = sp.begin + 4 * size_t(threadIdx.x);
  for (; i + stride < sp.end; i += 2 * stride) {
    const size_t j = i + stride;
    const float4 p0 = load(params, i), g0 = load_grad(i), m0 = load(m, i), v0 = load(v, i);
    const float4 p1 = load(params, j), g1 = load_grad(j), m1 = load(m, j), v1 = load(v, j);
    update4(i, p0, g0, m0, v0);
    update4(j, p1, g1, m1, v1);
  }
  if (i < sp.end) update4(i, load(params, i), load_grad(i), load(m, i), load(v, i));
}

AdamWArgs make_args(float lr, float beta1, float beta2, float eps, int step, float grad_scale) {
  // Bias corrections on the host, in float like the CPU reference.
  return AdamWArgs{lr, beta1, beta2, eps, 1.0f - std::pow(beta1, float(step)),
                   1.0f - std::pow(beta2, float(step)), grad_scale};
}

__global__ void zero_spans_kernel(float* x, const AdamWSpan* spans) {
  const AdamWSpan sp = spans[blockIdx.x];
  for (size_t i = sp.begin + threadIdx.x; i < sp.end; i += blockDim.x) x[i] = 0.0f;
}

}  // namespace

void adamw_update(float* params, const float* grads, float* m, float* v, size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  float grad_scale, bf16* params_h) {
  if (n == 0) return;
  adamw_kernel<<<grid_stride_blocks(n), 256, 0, stream()>>>(
      params, params_h, grads, m, v, n, make_args(lr, beta1, beta2, eps, step, grad_scale),
      weight_decay);
  GPT_CUDA_CHECK_LAUNCH();
}

void zero_spans(float* x, const AdamWSpan* spans, int n_spans) {
  if (n_spans == 0) return;
  zero_spans_kernel<<<n_spans, 256, 0, stream()>>>(x, spans);
  GPT_CUDA_CHECK_LAUNCH();
}

void adamw_update_spans(float* params, const float* grads, float* m, float* v,
                        const AdamWSpan* spans, int n_spans, float lr, float beta1, float beta2,
                        float eps, float weight_decay, int step, float grad_scale, bf16* params_h,
                        const float* device_scale, const int* device_ok, uint16_t* params_lo) {
  if (n_spans == 0) return;
  adamw_spans_kernel<<<n_spans, 512, 0, stream()>>>(
      params, params_h, grads, m, v, spans, make_args(lr, beta1, beta2, eps, step, grad_scale),
      weight_decay, device_scale, device_ok, params_lo);
  GPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpt::cuda
