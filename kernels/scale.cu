#include "kernels/scale.cuh"

namespace gpt::cuda {
namespace {

struct Scale {
  float* x;
  float s;
  __device__ void operator()(size_t i) const { x[i] *= s; }
};

}  // namespace

void scale_inplace(float* x, size_t n, float s) { for_each_index(n, Scale{x, s}); }

}  // namespace gpt::cuda
