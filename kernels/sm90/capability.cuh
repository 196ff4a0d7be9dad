// Whether the Hopper kernels of kernels/sm90/ may run: the one probe that gemm_sm90.cu and the
// flash attention dispatch (kernels/flash_attention.cu) ask before launching them.
#pragma once

namespace gpt::cuda {

// Whether this build holds sm_90a code, the current device is compute capability 9.0 and the
// driver encodes the tensor maps of their bulk copies.
bool sm90_available();

}  // namespace gpt::cuda
