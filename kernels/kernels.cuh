// Every CUDA training operation (namespace gpt::cuda), one header per operation. Same parameter
// lists as gpt::cpu in kernels/ops.h (device pointers, work queued on stream()); see
// cuda_common.cuh for the execution model and matmul.cuh for the bf16 path.
#pragma once

#include "kernels/adamw.cuh"
#include "kernels/attention.cuh"
#include "kernels/classifier.cuh"
#include "kernels/column_sum_batch.cuh"
#include "kernels/convert.cuh"
#include "kernels/cuda_common.cuh"
#include "kernels/dropout.cuh"
#include "kernels/encoder.cuh"
#include "kernels/flash_attention.cuh"
#include "kernels/gelu.cuh"
#include "kernels/layernorm.cuh"
#include "kernels/matmul.cuh"
#include "kernels/residual.cuh"
#include "kernels/scale.cuh"
#include "kernels/step_end.cuh"
#include "kernels/sum_squares.cuh"
