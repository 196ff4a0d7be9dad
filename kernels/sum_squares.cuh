// Sum of squares in double for the global gradient norm (ops.h: sum_squares), deterministic:
// one block per AdamW span of at most 64K elements (fixed thread-to-element map and tree order),
// then one block adds the span sums in a fixed order. The result depends on the spans alone, not
// on the GPU. x must be 16-byte aligned (read in 16-byte words; cudaMalloc'd buffers are).
#pragma once

#include "kernels/adamw.cuh"
#include "kernels/cuda_common.cuh"

namespace gpt::cuda {

// The sum of squares of a gradient cut into AdamW's spans (spans: a device array, as
// adamw_update_spans takes it), one block per span, then the span sums in span order: a function
// of the spans alone. A span with grad_bf16 is read in bf16 (AdamWSpan), and adds the same
// bits as an fp32 gradient holding the same values.
void sum_squares_spans_to_device(double* out, const float* x, const AdamWSpan* spans, int n_spans);
// The same, returned to the host (waits for the stream).
double sum_squares_spans(const float* x, const AdamWSpan* spans, int n_spans);

}  // namespace gpt::cuda
